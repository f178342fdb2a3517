//! What a peer can make the decoder allocate is proportional to what it
//! sent: at most `BUDGET_PER_BYTE × input + BUDGET_FLOOR` bytes of decoded
//! elements (plus the strings and byte objects, which are never larger than
//! their wire form). Measured with a counting global allocator in this test
//! crate, on 1 MiB of hostile input of three shapes. The counters are per
//! thread: the decoding thread's own allocations are measured, whatever the
//! other tests of the crate do meanwhile.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Mutex;

use pmix_tools::codec::{
    DataArray, Decoder, Encoder, Value, WireVersion, BUDGET_FLOOR, BUDGET_PER_BYTE,
};
use pmix_tools::proto::status::Status;

struct Counting;

thread_local! {
    /// Bytes this thread allocated minus the bytes it freed.
    static LIVE: Cell<isize> = const { Cell::new(0) };
    /// The highest [`LIVE`] reached since the last reset.
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn count(delta: isize) {
    // `try_with`: nothing to count while the thread is being torn down.
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = System.alloc(l);
        if !p.is_null() {
            count(l.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l);
        count(-(l.size() as isize));
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Tests in this crate measure one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

const MIB: usize = 1 << 20;

/// Peak bytes allocated (above what was live before) while decoding `bytes`
/// as one value, and whether it decoded.
fn peak_while_decoding(bytes: &[u8], wire: WireVersion) -> (usize, Result<(), Status>) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let r = Decoder::new(bytes, wire)
        .unpack_one::<Value>()
        .map(drop)
        .map_err(|e| e.status);
    let peak = PEAK.with(Cell::get) - base;
    (
        usize::try_from(peak).expect("peak is not below the base"),
        r,
    )
}

fn bound(input: usize) -> usize {
    input * BUDGET_PER_BYTE + BUDGET_FLOOR + input
}

/// 1 MiB of `PMIX_UNDEF` values in one data array: every element is a type
/// tag on the wire and a whole `Value` in memory.
#[test]
fn a_mebibyte_of_undef_values_stays_within_the_bound() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    for wire in [WireVersion::V41, WireVersion::V61] {
        let mut n = MIB;
        let bytes = loop {
            let mut e = Encoder::new(wire);
            e.pack_one(&Value::DataArray(DataArray::values(vec![Value::Undef; n])))
                .expect("pack");
            let b = e.into_bytes();
            if b.len() <= MIB {
                break b;
            }
            n = n * MIB / b.len() - 1;
        };
        let (peak, r) = peak_while_decoding(&bytes, wire);
        assert!(
            peak <= bound(bytes.len()),
            "{wire}: {} input bytes made the decoder allocate {peak} (bound {}), result {r:?}",
            bytes.len(),
            bound(bytes.len())
        );
    }
}

/// Data arrays nested 60 deep, each claiming half a mebibyte of elements (a
/// count the bytes remaining allow), then ending: every level used to
/// reserve `count × size_of::<Value>()` up front.
#[test]
fn lying_counts_at_every_depth_reserve_nothing_large() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    for wire in [WireVersion::V41, WireVersion::V61] {
        // One level: VALUE tag DATA_ARRAY, element type VALUE, a count.
        let level = |count: usize| {
            let mut e = Encoder::new(wire);
            e.put_type(pmix_tools::codec::dt::DATA_ARRAY).expect("tag");
            e.put_type(pmix_tools::codec::dt::VALUE).expect("tag");
            e.put_len(count);
            e.into_bytes()
        };
        // `unpack_one` reads an item count (1) before the value.
        let mut one = Encoder::new(wire);
        one.put_i32(1);
        let mut bytes = one.into_bytes();
        for _ in 0..60 {
            bytes.extend(level(MIB / 2));
        }
        bytes.resize(MIB, 0);
        let (peak, r) = peak_while_decoding(&bytes, wire);
        assert!(r.is_err(), "{wire}: hostile input decoded");
        assert!(
            peak <= bound(bytes.len()),
            "{wire}: {peak} bytes allocated for {} input bytes (bound {})",
            bytes.len(),
            bound(bytes.len())
        );
    }
}

/// A count beyond the budget is refused before anything is reserved, with
/// a typed error.
#[test]
fn a_count_beyond_the_budget_is_refused() {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut d = Decoder::new(&[0u8; 16], WireVersion::V61);
    let e = d.alloc::<Value>(usize::MAX / 2).expect_err("refused");
    assert_eq!(e.status, Status::ERR_UNPACK_INADEQUATE_SPACE);
    // Within the budget, the reservation is capped.
    let v = d.alloc::<u8>(1000).expect("small");
    assert!(v.capacity() <= pmix_tools::codec::PREALLOC_MAX);
}
