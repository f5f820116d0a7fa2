//! Repetitions and what is reported of them: medians, spreads, percentiles;
//! plus resident memory and waiting for a condition.

use std::time::{Duration, Instant};

/// The values of one figure over the repetitions of a run.
#[derive(Debug, Clone, Default)]
pub struct Samples(Vec<f64>);

impl Samples {
    /// No values yet.
    pub fn new() -> Self {
        Samples(Vec::new())
    }

    /// Adds one repetition's value.
    pub fn push(&mut self, value: f64) {
        self.0.push(value);
    }

    /// The values, in the order they were measured.
    pub fn values(&self) -> &[f64] {
        &self.0
    }

    /// The median (the mean of the middle two for an even count); NaN when empty.
    pub fn median(&self) -> f64 {
        percentile(&self.0, 50.0)
    }

    /// The smallest value; NaN when empty.
    pub fn min(&self) -> f64 {
        self.0.iter().copied().fold(f64::NAN, f64::min)
    }

    /// The largest value; NaN when empty.
    pub fn max(&self) -> f64 {
        self.0.iter().copied().fold(f64::NAN, f64::max)
    }

    /// True when there is at least one value and every value is finite.
    pub fn is_finite(&self) -> bool {
        !self.0.is_empty() && self.0.iter().all(|v| v.is_finite())
    }

    /// The values of `f(a, b)` for each pair of repetitions, e.g. a ratio of
    /// a figure to its baseline measured in the same repetition.
    pub fn paired(&self, other: &Samples, f: impl Fn(f64, f64) -> f64) -> Samples {
        Samples(
            self.0
                .iter()
                .zip(&other.0)
                .map(|(a, b)| f(*a, *b))
                .collect(),
        )
    }
}

/// The `p`-th percentile (0–100) of `values`, interpolating linearly between
/// the two nearest ranks; NaN when empty.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (p / 100.0) * (sorted.len() - 1) as f64;
    let low = rank.floor() as usize;
    let high = rank.ceil() as usize;
    sorted[low] + (sorted[high] - sorted[low]) * (rank - low as f64)
}

/// Resident set size of this process in bytes (from `/proc/self/statm`);
/// `None` where that file is missing.
pub fn resident_bytes() -> Option<u64> {
    const PAGE: u64 = 4096;
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * PAGE)
}

/// Proportional set size of this process in bytes (`Pss` of
/// `/proc/self/smaps_rollup`): its private pages, plus each shared page
/// divided by the number of mappings that hold it. Unlike the RSS, a page
/// mapped several times in this process (a plugin's memory image, mapped
/// copy-on-write once per instance) counts once, so its growth is the
/// physical memory added. `None` where that file is missing.
pub fn proportional_bytes() -> Option<u64> {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
    let kib: u64 = rollup
        .lines()
        .find_map(|line| line.strip_prefix("Pss:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// CPU time all of this process's threads have run for, in ns
/// (`CLOCK_PROCESS_CPUTIME_ID`: exact, and counting threads that have
/// exited). Time other processes take from the cores is not counted,
/// which is what makes CPU-time figures steadier than wall-clock ones on a
/// shared machine. `None` if the clock cannot be read.
pub fn process_cpu_ns() -> Option<u64> {
    cpu_clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// CPU time the calling thread has run for, in ns
/// (`CLOCK_THREAD_CPUTIME_ID`); `None` if the clock cannot be read.
pub fn thread_cpu_ns() -> Option<u64> {
    cpu_clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn cpu_clock_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec that outlives the call,
    // and `clock` is one of the CPU-time clock ids Linux defines.
    #[allow(unsafe_code)]
    let status = unsafe { libc::clock_gettime(clock, &mut now) };
    (status == 0).then(|| now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64)
}

/// Waits until `done` holds, checking every 50 µs; panics after `patience`
/// (a benchmark that stalls is broken, not slow).
pub fn wait_for(what: &str, patience: Duration, done: impl Fn() -> bool) {
    wait_every(what, patience, Duration::from_micros(50), done);
}

/// [`wait_for`], checking every `every`.
pub fn wait_every(what: &str, patience: Duration, every: Duration, done: impl Fn() -> bool) {
    let deadline = Instant::now() + patience;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "benchmark stalled waiting for {what}"
        );
        std::thread::sleep(every);
    }
}

/// How long a benchmark waits for something before declaring it stalled.
pub const PATIENCE: Duration = Duration::from_secs(120);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_percentiles_interpolate() {
        let mut samples = Samples::new();
        for v in [5.0, 1.0, 3.0, 2.0] {
            samples.push(v);
        }
        assert_eq!(samples.median(), 2.5);
        assert_eq!((samples.min(), samples.max()), (1.0, 5.0));
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0, 5.0], 100.0), 5.0);
        assert_eq!(percentile(&[10.0, 20.0], 50.0), 15.0);
        assert!(Samples::new().median().is_nan());
    }
}
