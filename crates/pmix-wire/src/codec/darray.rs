//! [`DataArray`]: `pmix_data_array_t`, a typed vector (element type tag,
//! count as `SIZE`, then the elements with no per-element tags).

use super::buffer::{Decoder, Encoder, Pack, Unpack};
use super::data::{App, DataArray, Info, PData, Query, Value};
use super::scalars::{pack_pids, unpack_pids};
use super::structs::Proc;
use super::types::{dt, type_name, DataType};
use crate::error::{Error, Result};
use crate::proto::status::Status;

impl DataArray {
    /// An array of strings.
    pub fn strings<I, S>(items: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        DataArray::Strings(items.into_iter().map(Into::into).collect())
    }

    /// An array of infos.
    pub fn infos(items: Vec<Info>) -> Self {
        DataArray::Infos(items)
    }

    /// An array of procs.
    pub fn procs(items: Vec<Proc>) -> Self {
        DataArray::Procs(items)
    }

    /// An array of values.
    pub fn values(items: Vec<Value>) -> Self {
        DataArray::Values(items)
    }

    /// An array of scalars of element type `t`.
    pub fn scalars(t: DataType, items: Vec<Value>) -> Self {
        DataArray::Scalars(t, items)
    }

    /// The element type code.
    pub fn elem_type(&self) -> DataType {
        match self {
            DataArray::Strings(_) => dt::STRING,
            DataArray::Procs(_) => dt::PROC,
            DataArray::Infos(_) => dt::INFO,
            DataArray::Values(_) => dt::VALUE,
            DataArray::Apps(_) => dt::APP,
            DataArray::Queries(_) => dt::QUERY,
            DataArray::PData(_) => dt::PDATA,
            DataArray::Scalars(t, _) => *t,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            DataArray::Strings(v) => v.len(),
            DataArray::Procs(v) => v.len(),
            DataArray::Infos(v) => v.len(),
            DataArray::Values(v) => v.len(),
            DataArray::Apps(v) => v.len(),
            DataArray::Queries(v) => v.len(),
            DataArray::PData(v) => v.len(),
            DataArray::Scalars(_, v) => v.len(),
        }
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The strings, for a string array.
    pub fn as_strings(&self) -> Option<&[String]> {
        match self {
            DataArray::Strings(v) => Some(v),
            _ => None,
        }
    }

    /// The infos, for an info array.
    pub fn as_infos(&self) -> Option<&[Info]> {
        match self {
            DataArray::Infos(v) => Some(v),
            _ => None,
        }
    }

    /// The procs, for a proc array.
    pub fn as_procs(&self) -> Option<&[Proc]> {
        match self {
            DataArray::Procs(v) => Some(v),
            _ => None,
        }
    }

    /// The items of a `Values` or `Scalars` array.
    pub fn as_values(&self) -> Option<&[Value]> {
        match self {
            DataArray::Values(v) | DataArray::Scalars(_, v) => Some(v),
            _ => None,
        }
    }

    /// Every element as a [`Value`] where one exists (strings, procs,
    /// values, scalars); `None` for infos, apps, queries and pdata.
    pub fn to_values(&self) -> Option<Vec<Value>> {
        match self {
            DataArray::Strings(v) => Some(v.iter().cloned().map(Value::String).collect()),
            DataArray::Procs(v) => Some(v.iter().cloned().map(Value::Proc).collect()),
            DataArray::Values(v) | DataArray::Scalars(_, v) => Some(v.clone()),
            _ => None,
        }
    }

    /// Writes the elements (no tag, no count).
    fn pack_elems(&self, enc: &mut Encoder) -> Result<()> {
        match self {
            DataArray::Strings(v) => v.iter().try_for_each(|s| enc.put_string(Some(s))),
            DataArray::Procs(v) => Proc::pack_slice(v, enc),
            DataArray::Infos(v) => Info::pack_slice(v, enc),
            DataArray::Values(v) => Value::pack_slice(v, enc),
            DataArray::Apps(v) => App::pack_slice(v, enc),
            DataArray::Queries(v) => Query::pack_slice(v, enc),
            DataArray::PData(v) => PData::pack_slice(v, enc),
            DataArray::Scalars(t, v) => {
                if let Some(bad) = v.iter().find(|x| x.data_type() != *t) {
                    return Err(Error::new(
                        Status::ERR_BAD_PARAM,
                        format!(
                            "{} element in a data array of {}",
                            type_name(bad.data_type()),
                            type_name(*t)
                        ),
                    ));
                }
                if *t == dt::PID {
                    let pids: Vec<u32> = v
                        .iter()
                        .map(|x| match x {
                            Value::Pid(p) => *p,
                            _ => 0,
                        })
                        .collect();
                    return pack_pids(enc, &pids);
                }
                v.iter().try_for_each(|x| x.pack_payload(enc))
            }
        }
    }

    /// Reads `n` elements of type `t` in canonical form.
    fn unpack_elems(dec: &mut Decoder, t: DataType, n: usize) -> Result<DataArray> {
        Ok(match t {
            dt::STRING => {
                let mut v: Vec<Option<String>> = dec.alloc(n)?;
                for _ in 0..n {
                    v.push(dec.get_string()?);
                }
                if v.iter().all(Option::is_some) {
                    DataArray::Strings(v.into_iter().flatten().collect())
                } else {
                    DataArray::Scalars(t, v.into_iter().map(Value::from).collect())
                }
            }
            dt::PROC => DataArray::Procs(Proc::unpack_many(dec, n)?),
            dt::INFO => DataArray::Infos(Info::unpack_many(dec, n)?),
            dt::VALUE => DataArray::Values(Value::unpack_many(dec, n)?),
            dt::APP => DataArray::Apps(App::unpack_many(dec, n)?),
            dt::QUERY => DataArray::Queries(Query::unpack_many(dec, n)?),
            dt::PDATA => DataArray::PData(PData::unpack_many(dec, n)?),
            dt::PID => DataArray::Scalars(
                t,
                unpack_pids(dec, n)?.into_iter().map(Value::Pid).collect(),
            ),
            _ => {
                let mut v: Vec<Value> = dec.alloc(n)?;
                for _ in 0..n {
                    v.push(Value::unpack_payload(dec, t)?);
                }
                DataArray::Scalars(t, v)
            }
        })
    }
}

impl Pack for DataArray {
    const DT: DataType = dt::DATA_ARRAY;
    fn pack_body(&self, enc: &mut Encoder) -> Result<()> {
        let t = self.elem_type();
        if t == dt::UNDEF && !self.is_empty() {
            return Err(Error::new(
                Status::ERR_BAD_PARAM,
                "a data array of PMIX_UNDEF cannot carry elements",
            ));
        }
        enc.enter()?;
        let r = (|| {
            enc.put_type(t)?;
            enc.put_len(self.len());
            if self.is_empty() {
                return Ok(());
            }
            self.pack_elems(enc)
        })();
        enc.leave();
        r
    }
}

impl Unpack for DataArray {
    const DT: DataType = dt::DATA_ARRAY;
    fn unpack_body(dec: &mut Decoder) -> Result<Self> {
        dec.enter()?;
        let r = (|| {
            let t = dec.get_type()?;
            let n = dec.get_u64()?;
            if t == dt::UNDEF && n != 0 {
                return Err(Error::new(
                    Status::ERR_UNPACK_FAILURE,
                    format!("data array of PMIX_UNDEF claims {n} elements"),
                ));
            }
            let n = dec.count(i64::try_from(n).unwrap_or(i64::MAX), "data array size")?;
            Self::unpack_elems(dec, t, n)
        })();
        dec.leave();
        r
    }
}
