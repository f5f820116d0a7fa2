//! The report: one row per measured figure, printed as a Markdown table
//! (id, what, baseline, median, spread, ratio, goal, met?) followed by
//! details (the absolute figures behind each ratio).

use crate::measure::Samples;
use std::fmt::Write as _;

/// The unit a figure is shown in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Microseconds.
    Micros,
    /// Milliseconds.
    Millis,
    /// Seconds.
    Seconds,
    /// Events (notifications, objects) per second.
    PerSecond,
    /// Bytes (shown in KiB or MiB).
    Bytes,
    /// Bytes per object (shown in KiB/object).
    BytesPerObject,
}

impl Unit {
    /// `value` in this unit, for a person.
    pub fn show(self, value: f64) -> String {
        if !value.is_finite() {
            return "—".into();
        }
        match self {
            Unit::Micros => format!("{value:.3} µs"),
            Unit::Millis => format!("{value:.2} ms"),
            Unit::Seconds => format!("{value:.2} s"),
            Unit::PerSecond if value >= 10_000.0 => format!("{:.1} k/s", value / 1e3),
            Unit::PerSecond => format!("{value:.0} /s"),
            Unit::Bytes if value.abs() >= 1024.0 * 1024.0 => {
                format!("{:.1} MiB", value / (1024.0 * 1024.0))
            }
            Unit::Bytes => format!("{:.1} KiB", value / 1024.0),
            Unit::BytesPerObject => format!("{:.2} KiB/obj", value / 1024.0),
        }
    }
}

/// What a row is held to.
#[derive(Debug, Clone, PartialEq)]
pub enum Goal {
    /// Context only.
    None,
    /// The ratio (measured / baseline) at most this.
    RatioAtMost(f64),
    /// The ratio at least this.
    RatioAtLeast(f64),
    /// The measured value at most this (in the row's unit).
    ValueAtMost(f64),
    /// The measured value at least this (in the row's unit).
    ValueAtLeast(f64),
    /// Measured minus baseline, repetition by repetition, at most this (in
    /// the row's unit) in the median.
    AddedAtMost(f64),
    /// Not measurable yet; the text says why.
    Pending(&'static str),
}

/// One measured figure and its baseline.
#[derive(Debug, Clone)]
pub struct Row {
    /// Benchmark id and case, e.g. `B1.a`.
    pub id: String,
    /// What is measured.
    pub what: String,
    /// Unit of `baseline` and `measured`.
    pub unit: Unit,
    /// The baseline, measured in the same repetitions (empty if none).
    pub baseline: Samples,
    /// The figure itself, one value per repetition.
    pub measured: Samples,
    /// Per-repetition ratio of `measured` to `baseline` (empty if none).
    pub ratio: Samples,
    /// The goal.
    pub goal: Goal,
    /// Absolute figures behind the row, for the details section.
    pub details: String,
}

impl Row {
    /// A row whose ratio is measured / baseline, repetition by repetition.
    pub fn ratio_of(
        id: impl Into<String>,
        what: impl Into<String>,
        unit: Unit,
        baseline: Samples,
        measured: Samples,
        goal: Goal,
    ) -> Row {
        let ratio = measured.paired(&baseline, |m, b| m / b);
        Row {
            id: id.into(),
            what: what.into(),
            unit,
            baseline,
            measured,
            ratio,
            goal,
            details: String::new(),
        }
    }

    /// Adds the details line.
    pub fn with_details(mut self, details: impl Into<String>) -> Row {
        self.details = details.into();
        self
    }

    /// Per-repetition difference of `measured` over `baseline`: what the
    /// measured path adds to its baseline, each against the baseline taken
    /// next to it (so the baseline's own noise between repetitions cancels).
    pub fn added(&self) -> Samples {
        self.measured.paired(&self.baseline, |m, b| m - b)
    }

    /// Whether the goal is met: `None` when there is no goal (or it is pending).
    pub fn met(&self) -> Option<bool> {
        let value = self.measured.median();
        match self.goal {
            Goal::None | Goal::Pending(_) => None,
            Goal::RatioAtMost(limit) => Some(self.ratio.median() <= limit),
            Goal::RatioAtLeast(limit) => Some(self.ratio.median() >= limit),
            Goal::ValueAtMost(limit) => Some(value <= limit),
            Goal::ValueAtLeast(limit) => Some(value >= limit),
            Goal::AddedAtMost(limit) => Some(self.added().median() <= limit),
        }
    }

    /// True when every figure the row reports is a finite number (pending
    /// rows report none).
    pub fn is_complete(&self) -> bool {
        if matches!(self.goal, Goal::Pending(_)) {
            return true;
        }
        self.measured.is_finite()
            && (self.baseline.values().is_empty() || self.baseline.is_finite())
            && (self.ratio.values().is_empty() || self.ratio.is_finite())
    }

    fn goal_text(&self) -> String {
        match &self.goal {
            Goal::None => "context".into(),
            Goal::RatioAtMost(limit) => format!("ratio ≤ {limit}"),
            Goal::RatioAtLeast(limit) => format!("ratio ≥ {limit:.3}"),
            Goal::ValueAtMost(limit) => format!("≤ {}", self.unit.show(*limit)),
            Goal::ValueAtLeast(limit) => format!("≥ {}", self.unit.show(*limit)),
            Goal::AddedAtMost(limit) => format!("adds ≤ {}", self.unit.show(*limit)),
            Goal::Pending(why) => format!("pending: {why}"),
        }
    }
}

/// The rows as a Markdown table followed by their details.
pub fn render(rows: &[Row]) -> String {
    let mut out = String::new();
    out.push_str(
        "| id | what | baseline | median | spread (min–max) | ratio (min–max) | goal | met? |\n",
    );
    out.push_str("|---|---|---|---|---|---|---|---|\n");
    for row in rows {
        let baseline = if row.baseline.values().is_empty() {
            "—".to_owned()
        } else {
            row.unit.show(row.baseline.median())
        };
        let (median, spread) = if matches!(row.goal, Goal::Pending(_)) {
            ("—".to_owned(), "—".to_owned())
        } else {
            (
                row.unit.show(row.measured.median()),
                format!(
                    "{} – {}",
                    row.unit.show(row.measured.min()),
                    row.unit.show(row.measured.max())
                ),
            )
        };
        let ratio = if row.ratio.values().is_empty() {
            "—".to_owned()
        } else {
            format!(
                "{:.3} ({:.3}–{:.3})",
                row.ratio.median(),
                row.ratio.min(),
                row.ratio.max()
            )
        };
        let met = match row.met() {
            Some(true) => "yes",
            Some(false) => "**no**",
            None => "—",
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            row.id,
            row.what,
            baseline,
            median,
            spread,
            ratio,
            row.goal_text(),
            met
        );
    }
    let details: Vec<&Row> = rows.iter().filter(|r| !r.details.is_empty()).collect();
    if !details.is_empty() {
        out.push_str("\nDetails (medians over the repetitions):\n\n");
        for row in details {
            let _ = writeln!(out, "- {}: {}", row.id, row.details);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(values: &[f64]) -> Samples {
        let mut s = Samples::new();
        for v in values {
            s.push(*v);
        }
        s
    }

    #[test]
    fn goals_are_judged_on_medians() {
        let row = Row::ratio_of(
            "X",
            "x",
            Unit::Micros,
            samples(&[1.0, 1.0, 1.0]),
            samples(&[0.5, 0.9, 2.0]),
            Goal::RatioAtMost(1.0),
        );
        assert_eq!(row.met(), Some(true));
        assert!(row.is_complete());
        let text = render(&[row]);
        assert!(text.contains("| X | x | 1.000 µs | 0.900 µs |"), "{text}");
    }
}
