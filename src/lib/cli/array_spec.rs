//! `pspawn --array SPEC`: the task indices of a job array, in Slurm's
//! forms (`sbatch --array`): `1-1000`, `1-1000:2`, `1,5,9`, mixed
//! `1-3,7`, each optionally followed by `%N`, the most tasks in flight.

/// Most tasks one array may hold.
pub const MAX_TASKS: usize = 1_000_000;

/// The valid forms, named in every refusal.
const FORMS: &str = "valid forms: 1-1000 (a range), 1-1000:2 (a range with a step), 1,5,9 \
(a list), 1-3,7 (both), each optionally ending in %N (at most N tasks at once), e.g. 1-1000%16";

/// A checked `--array` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArraySpec {
    /// The task indices, ascending, each once (as Slurm's bitmap).
    pub ids: Vec<u32>,
    /// `%N`: the most tasks in flight at once (none: no limit).
    pub limit: Option<u32>,
}

impl ArraySpec {
    /// Parse `s`; an error names the valid forms.
    pub fn parse(s: &str) -> Result<ArraySpec, String> {
        let refuse = |why: &str| format!("--array `{s}`: {why}; {FORMS}");
        let (list, limit) = match s.split_once('%') {
            Some((l, n)) => (l, Some(parse_limit(n).map_err(|w| refuse(&w))?)),
            None => (s, None),
        };
        if list.trim().is_empty() {
            return Err(refuse("no index given"));
        }
        let mut ids = Vec::new();
        for part in list.split(',') {
            add_part(part.trim(), &mut ids).map_err(|w| refuse(&w))?;
            if ids.len() > MAX_TASKS {
                return Err(refuse(&format!("more than {MAX_TASKS} tasks")));
            }
        }
        ids.sort_unstable();
        ids.dedup();
        Ok(ArraySpec { ids, limit })
    }

    /// The most tasks to keep in flight: `%N`, else all of them.
    pub fn in_flight(&self) -> usize {
        self.limit
            .map_or(self.ids.len(), |n| usize::try_from(n).unwrap_or(usize::MAX))
            .max(1)
    }
}

/// `%N`: a count of at least 1.
fn parse_limit(n: &str) -> Result<u32, String> {
    match n.trim().parse::<u32>() {
        Ok(0) => Err("%0 would run no task: the limit is at least 1".into()),
        Ok(v) => Ok(v),
        Err(_) => Err(format!("`%{n}` is not a task limit")),
    }
}

/// One comma-separated part: `I`, `A-B` or `A-B:S`.
fn add_part(part: &str, ids: &mut Vec<u32>) -> Result<(), String> {
    let index = |t: &str| {
        t.trim()
            .parse::<u32>()
            .map_err(|_| format!("`{t}` is not an index (a number from 0)"))
    };
    if part.is_empty() {
        return Err("an empty item between commas".into());
    }
    let Some((a, rest)) = part.split_once('-') else {
        if part.contains(':') {
            return Err(format!("`{part}`: a step (:S) follows a range A-B"));
        }
        ids.push(index(part)?);
        return Ok(());
    };
    let (b, step) = match rest.split_once(':') {
        Some((b, st)) => (b, index(st)?),
        None => (rest, 1),
    };
    let (a, b) = (index(a)?, index(b)?);
    if b < a {
        return Err(format!("`{part}`: the range ends before it starts"));
    }
    if step == 0 {
        return Err(format!("`{part}`: a step of 0"));
    }
    let count = (u64::from(b - a) / u64::from(step)) as usize + 1;
    if ids.len() + count > MAX_TASKS {
        return Err(format!("more than {MAX_TASKS} tasks"));
    }
    ids.extend((a..=b).step_by(step as usize));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(s: &str) -> Vec<u32> {
        ArraySpec::parse(s).expect(s).ids
    }

    #[test]
    fn slurm_forms_give_their_indices() {
        assert_eq!(ids("1-5"), [1, 2, 3, 4, 5]);
        assert_eq!(ids("1-9:2"), [1, 3, 5, 7, 9]);
        assert_eq!(ids("1,5,9"), [1, 5, 9]);
        assert_eq!(ids("7,1-3"), [1, 2, 3, 7]);
        assert_eq!(ids("0-2,1"), [0, 1, 2]);
        let a = ArraySpec::parse("1-1000%16").expect("valid");
        assert_eq!((a.ids.len(), a.limit, a.in_flight()), (1000, Some(16), 16));
        assert_eq!(ArraySpec::parse("1-3").expect("valid").in_flight(), 3);
    }

    #[test]
    fn bad_forms_are_refused_naming_the_valid_ones() {
        for bad in [
            "",
            "%4",
            "5-1",
            "1-10:0",
            "a-3",
            "1,,2",
            "1-3%0",
            "1-3%x",
            "3:2",
            "-1",
            "1-",
            "0-4294967295",
        ] {
            let e = ArraySpec::parse(bad).expect_err(bad);
            assert!(e.contains("valid forms: 1-1000"), "{bad}: {e}");
        }
    }
}
