//! What a plugin declares about one metric, and the rules a declaration
//! must pass before the plugin loads: Prometheus' naming rules, the
//! conventions that keep the exposition unambiguous, and the names the
//! host's own families hold.

use std::collections::{HashMap, HashSet};

/// Prometheus' default histogram buckets (client_golang's `DefBuckets`),
/// used when a histogram declares none.
pub const DEFAULT_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// What every plugin metric's exported name starts with.
pub const EXPORTED_PREFIX: &str = "herald_plugin_";
/// Most metrics one plugin may define.
pub const MAX_METRICS: usize = 100;
/// Most labels one metric may have (besides the `plugin` label the host adds).
pub const MAX_LABELS: usize = 16;
/// Most buckets one histogram may declare (the host adds `+Inf`).
pub const MAX_BUCKETS: usize = 64;
/// Longest metric or label name, in bytes.
pub const MAX_NAME_BYTES: usize = 128;
/// Longest help text, in bytes.
pub const MAX_HELP_BYTES: usize = 1024;

/// The kind of a plugin metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MetricKind {
    /// A value that only goes up (`add` with a value ≥ 0); its name ends in `_total`.
    Counter,
    /// A value that goes up and down (`add` any finite value, or `set`).
    Gauge,
    /// Observations counted into buckets (`observe`), with their sum and count.
    Histogram,
}

impl MetricKind {
    /// The kind as the exposition's `# TYPE` line writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            MetricKind::Counter => "counter",
            MetricKind::Gauge => "gauge",
            MetricKind::Histogram => "histogram",
        }
    }
}

impl std::fmt::Display for MetricKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One metric as a plugin's manifest declares it (host-neutral: the
/// bindings convert the WIT record into this). Serialized as the manifest
/// shows it (`herald plugin check`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricDefinition {
    /// The metric's name without the host's prefix: exported as
    /// `herald_plugin_<name>`.
    pub name: String,
    /// What it measures: one line, exported as `# HELP`.
    pub help: String,
    /// Counter, gauge or histogram.
    pub kind: MetricKind,
    /// Its label names, in the order updates give their values. The host
    /// adds `plugin` before them.
    pub label_names: Vec<String>,
    /// A histogram's bucket upper bounds, finite and strictly increasing
    /// (the host adds `+Inf`); empty: [`DEFAULT_BUCKETS`]. Empty for the
    /// other kinds.
    pub buckets: Vec<f64>,
}

/// What makes two definitions of one metric the same series: kind, label
/// names and (histograms) bucket bounds. Help text is not part of it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Shape {
    pub kind: MetricKind,
    pub label_names: Box<[String]>,
    /// The bucket bounds, defaults filled in; empty for counters and gauges.
    pub bounds: Box<[f64]>,
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a {} with labels [{}]",
            self.kind,
            self.label_names.join(", ")
        )?;
        if self.kind == MetricKind::Histogram {
            let bounds: Vec<String> = self.bounds.iter().map(f64::to_string).collect();
            write!(f, " and buckets [{}]", bounds.join(", "))?;
        }
        Ok(())
    }
}

/// A definition that passed every check.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Checked {
    pub name: String,
    pub help: String,
    pub shape: Shape,
}

/// The exported family name of `plugin`'s metric `name`: the prefix, the
/// plugin's namespace (its name, `-` written `_`), `__`, and the metric's
/// name (a counter's without `_total`, which the encoder adds to the
/// samples, as for the host's own counters): `herald_plugin_image_policy__violations`.
///
/// Every plugin's families live in a namespace of their own, so no plugin
/// can take a name another needs, nor refuse it its load. The mapping, and
/// every name the exposition writes for a family ([`exposed_names`]), is
/// one to one with (plugin, metric, suffix):
///
/// - a plugin name is an RFC 1123 label: lowercase letters, digits and `-`,
///   never `_`, starting and ending with a letter or a digit; so writing
///   `-` as `_` loses nothing, and its namespace never starts or ends with
///   `_` (it may hold `__`, from a plugin name holding `--`);
/// - a metric name never starts or ends with `_` nor holds `__`
///   (`check`'s rules), and every suffix the exposition adds
///   ([`SUFFIXES`]) is `_` and a letter, so what follows the separator never
///   holds `__`;
///
/// so the *last* `__` of any exposed name is the separator: it splits the
/// name back into the plugin's namespace (hence the plugin) and the metric
/// with its suffix. No host family holds `__`. The registry checks every
/// exposed name against every other plugin's and the host's all the same,
/// so even a broken mapping could not write two `# TYPE` lines for one
/// name.
pub fn family_name(plugin: &str, name: &str, kind: MetricKind) -> String {
    let name = match kind {
        MetricKind::Counter => name.strip_suffix("_total").unwrap_or(name),
        _ => name,
    };
    format!("{EXPORTED_PREFIX}{}__{name}", plugin.replace('-', "_"))
}

/// Every suffix an exposition may add to a family's name for its samples,
/// whatever its type: counters' `_total` and `_created`, histograms' and
/// summaries' `_bucket`, `_sum`, `_count` and `_created`, info metrics'
/// `_info`. A family reserves its name with each of them.
pub const SUFFIXES: [&str; 6] = ["_bucket", "_sum", "_count", "_created", "_total", "_info"];

/// Every name a family called `family` takes in the exposition: its own,
/// and its own with each of [`SUFFIXES`] (more than its type writes: what a
/// family reserves does not depend on its type, so no two families can
/// come to share a sample name whatever types they have).
pub(super) fn occupied(family: &str) -> Vec<String> {
    std::iter::once(family.to_owned())
        .chain(SUFFIXES.iter().map(|suffix| format!("{family}{suffix}")))
        .collect()
}

/// Every name `plugin`'s metric `name` of `kind` takes in the exposition:
/// `occupied` of its [`family_name`].
pub fn exposed_names(plugin: &str, name: &str, kind: MetricKind) -> Vec<String> {
    occupied(&family_name(plugin, name, kind))
}

/// Every name the host's own families take in the exposition
/// ([`crate::telemetry::HOST_FAMILIES`], each with every suffix): names no
/// plugin metric may take.
pub fn host_exposed_names() -> &'static HashSet<String> {
    static NAMES: std::sync::OnceLock<HashSet<String>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        crate::telemetry::HOST_FAMILIES
            .iter()
            .flat_map(|(family, _)| occupied(family))
            .collect()
    })
}

/// A name for messages: quoted, control characters escaped, cut short.
pub(super) fn shown(name: &str) -> String {
    const MAX: usize = 64;
    match name.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{:?}…", &name[..cut]),
        None => format!("{name:?}"),
    }
}

/// `[a-zA-Z_][a-zA-Z0-9_]*`: a Prometheus metric name without colons, or a
/// label name.
fn is_identifier(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Metric definitions a plugin cannot have; the message names the plugin
/// and the metric at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DefinitionError {
    /// More than [`MAX_METRICS`] definitions.
    #[error("plugin {plugin:?} defines {count} metrics, more than the {MAX_METRICS} allowed")]
    TooMany {
        /// The plugin.
        plugin: String,
        /// How many it defines.
        count: usize,
    },
    /// One definition is refused.
    #[error("plugin {plugin:?} metric {}: {problem}", shown(.metric))]
    Metric {
        /// The plugin.
        plugin: String,
        /// The metric's name as given.
        metric: String,
        /// What is wrong with it.
        #[source]
        problem: MetricProblem,
    },
}

/// What is wrong with one metric definition; each variant holds the value
/// at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MetricProblem {
    /// The name is longer than [`MAX_NAME_BYTES`] (its length held here).
    #[error("the name is {0} bytes long, more than the {MAX_NAME_BYTES} allowed")]
    NameTooLong(usize),
    /// The name holds `:`.
    #[error("metric names may not contain ':' (colons are reserved for recording rules)")]
    Colon,
    /// The name is not `[a-zA-Z_][a-zA-Z0-9_]*`.
    #[error("is not a valid metric name: use letters, digits and '_', not starting with a digit")]
    NotAName,
    /// The name starts with `_` or holds `__`.
    #[error(
        "may not start with '_' nor hold '__' (the host writes `__` between the plugin's \
         namespace and the metric's name)"
    )]
    Underscores,
    /// The name ends in `_`.
    #[error(
        "may not end in '_' (a suffix the exposition adds, such as _bucket, would then make \
         `__`, the separator between a plugin's namespace and its metrics' names)"
    )]
    TrailingUnderscore,
    /// A counter's name without `_total`.
    #[error("a counter's name must end in _total")]
    NoTotal,
    /// A counter named only `_total`.
    #[error("a counter's name needs something before _total")]
    OnlyTotal,
    /// A gauge's or histogram's name ending in a suffix of other series.
    #[error(
        "a {kind}'s name may not end in {suffix} (the suffixes _total, _count, _sum and _bucket \
         belong to counters' and histograms' series)"
    )]
    ReservedSuffix {
        /// The metric's kind.
        kind: MetricKind,
        /// The suffix at fault.
        suffix: &'static str,
    },
    /// No help text.
    #[error("its help text is empty: say what it measures")]
    NoHelp,
    /// The help text is longer than [`MAX_HELP_BYTES`] (its length held here).
    #[error("its help text is {0} bytes long, more than the {MAX_HELP_BYTES} allowed")]
    HelpTooLong(usize),
    /// The help text holds a character that could break the exposition.
    #[error(
        "its help text must be one line without control characters (line breaks, tabs), line \
         separators, bidirectional or invisible marks"
    )]
    HelpUnsafe,
    /// More than [`MAX_LABELS`] labels (their number held here).
    #[error("it has {0} labels, more than the {MAX_LABELS} allowed")]
    TooManyLabels(usize),
    /// A label name is refused.
    #[error("label {}: {problem}", shown(.label))]
    Label {
        /// The label name as given.
        label: String,
        /// What is wrong with it.
        problem: LabelProblem,
    },
    /// More than [`MAX_BUCKETS`] buckets (their number held here).
    #[error("it has {0} buckets, more than the {MAX_BUCKETS} allowed")]
    TooManyBuckets(usize),
    /// A bucket bound (held here) that is NaN or infinite.
    #[error("bucket bound {0} is not a finite number (the host adds +Inf itself)")]
    InfiniteBound(f64),
    /// Two bounds (held here) out of order.
    #[error("bucket bounds must be strictly increasing: {0} then {1}")]
    Unordered(f64, f64),
    /// Buckets given to a metric of another kind (held here).
    #[error("a {0} has no buckets: buckets are for histograms only")]
    Buckets(MetricKind),
    /// Two definitions of one name.
    #[error("is defined twice")]
    Twice,
    /// One of its series takes the name of another metric's of the plugin.
    #[error(
        "its series {series} would collide with those of metric {}: rename one of them",
        shown(.other)
    )]
    Collides {
        /// The series' exposed name.
        series: String,
        /// The other metric.
        other: String,
    },
    /// One of its series is already exposed by the host or another plugin.
    #[error("its series {series} is {owner}: no two families may share an exposed name")]
    Taken {
        /// The series' exposed name.
        series: String,
        /// Whose it is.
        owner: Owner,
    },
}

/// Whose an exposed name already is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// One of the host's own families.
    Host,
    /// The plugin named here.
    Plugin(String),
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Owner::Host => f.write_str("one of the host's own"),
            Owner::Plugin(plugin) => write!(f, "already plugin {plugin:?}'s"),
        }
    }
}

/// What is wrong with a label name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LabelProblem {
    /// Longer than [`MAX_NAME_BYTES`].
    #[error("is longer than {MAX_NAME_BYTES} bytes")]
    TooLong,
    /// Not `[a-zA-Z_][a-zA-Z0-9_]*`.
    #[error("is not a valid label name: use letters, digits and '_', not starting with a digit")]
    NotAName,
    /// Starts with `__`.
    #[error("names starting with __ are reserved for Prometheus' own use")]
    Prometheus,
    /// `plugin`.
    #[error("is reserved: the host adds the plugin's name as `plugin`")]
    Plugin,
    /// `quantile`.
    #[error("is reserved for summaries' quantiles")]
    Quantile,
    /// `le` on a histogram.
    #[error("is reserved for a histogram's bucket bounds")]
    Le,
    /// Given twice.
    #[error("is given twice")]
    Twice,
}

/// Checks `plugin`'s definitions (each on its own, and against each other:
/// no two of its series may share a name); the error names the plugin and
/// the metric at fault.
pub(super) fn check_all(
    plugin: &str,
    definitions: &[MetricDefinition],
) -> Result<Vec<Checked>, DefinitionError> {
    if definitions.len() > MAX_METRICS {
        return Err(DefinitionError::TooMany {
            plugin: plugin.to_owned(),
            count: definitions.len(),
        });
    }
    let mut checked: Vec<Checked> = Vec::with_capacity(definitions.len());
    // Sample name → the metric of this plugin taking it.
    let mut taken: HashMap<String, String> = HashMap::new();
    for definition in definitions {
        let at_fault = |problem| DefinitionError::Metric {
            plugin: plugin.to_owned(),
            metric: definition.name.clone(),
            problem,
        };
        let one = check(definition).map_err(at_fault)?;
        if checked.iter().any(|c| c.name == one.name) {
            return Err(at_fault(MetricProblem::Twice));
        }
        let names = exposed_names(plugin, &one.name, one.shape.kind);
        for name in &names {
            if let Some(other) = taken.get(name) {
                return Err(at_fault(MetricProblem::Collides {
                    series: name.clone(),
                    other: other.clone(),
                }));
            }
        }
        for name in names {
            taken.insert(name, one.name.clone());
        }
        checked.push(one);
    }
    Ok(checked)
}

/// Checks one definition on its own; the error says what is wrong with it.
fn check(definition: &MetricDefinition) -> Result<Checked, MetricProblem> {
    let MetricDefinition {
        name,
        help,
        kind,
        label_names,
        buckets,
    } = definition;
    let kind = *kind;
    if name.len() > MAX_NAME_BYTES {
        return Err(MetricProblem::NameTooLong(name.len()));
    }
    if name.contains(':') {
        return Err(MetricProblem::Colon);
    }
    if !is_identifier(name) {
        return Err(MetricProblem::NotAName);
    }
    if name.starts_with('_') || name.contains("__") {
        return Err(MetricProblem::Underscores);
    }
    if name.ends_with('_') {
        return Err(MetricProblem::TrailingUnderscore);
    }
    match kind {
        MetricKind::Counter => match name.strip_suffix("_total") {
            None => return Err(MetricProblem::NoTotal),
            Some("") => return Err(MetricProblem::OnlyTotal),
            Some(_) => {}
        },
        MetricKind::Gauge | MetricKind::Histogram => {
            for suffix in ["_total", "_count", "_sum", "_bucket"] {
                if name.ends_with(suffix) {
                    return Err(MetricProblem::ReservedSuffix { kind, suffix });
                }
            }
        }
    }
    if help.trim().is_empty() {
        return Err(MetricProblem::NoHelp);
    }
    if help.len() > MAX_HELP_BYTES {
        return Err(MetricProblem::HelpTooLong(help.len()));
    }
    if help.chars().any(crate::text::is_unsafe) {
        return Err(MetricProblem::HelpUnsafe);
    }
    if label_names.len() > MAX_LABELS {
        return Err(MetricProblem::TooManyLabels(label_names.len()));
    }
    let mut seen = HashSet::new();
    for label in label_names {
        let refuse = |problem| {
            Err(MetricProblem::Label {
                label: label.clone(),
                problem,
            })
        };
        if label.len() > MAX_NAME_BYTES {
            return refuse(LabelProblem::TooLong);
        }
        if !is_identifier(label) {
            return refuse(LabelProblem::NotAName);
        }
        if label.starts_with("__") {
            return refuse(LabelProblem::Prometheus);
        }
        if label == "plugin" {
            return refuse(LabelProblem::Plugin);
        }
        if label == "quantile" {
            return refuse(LabelProblem::Quantile);
        }
        if label == "le" && kind == MetricKind::Histogram {
            return refuse(LabelProblem::Le);
        }
        if !seen.insert(label.as_str()) {
            return refuse(LabelProblem::Twice);
        }
    }
    let bounds: Box<[f64]> = match kind {
        MetricKind::Histogram if buckets.is_empty() => DEFAULT_BUCKETS.into(),
        MetricKind::Histogram => {
            if buckets.len() > MAX_BUCKETS {
                return Err(MetricProblem::TooManyBuckets(buckets.len()));
            }
            if let Some(bad) = buckets.iter().find(|b| !b.is_finite()) {
                return Err(MetricProblem::InfiniteBound(*bad));
            }
            if let Some(pair) = buckets.windows(2).find(|pair| pair[0] >= pair[1]) {
                return Err(MetricProblem::Unordered(pair[0], pair[1]));
            }
            buckets.as_slice().into()
        }
        _ if !buckets.is_empty() => {
            return Err(MetricProblem::Buckets(kind));
        }
        _ => Box::default(),
    };
    Ok(Checked {
        name: name.clone(),
        help: help.clone(),
        shape: Shape {
            kind,
            label_names: label_names.as_slice().into(),
            bounds,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capability::metrics::registry::tests::counter;

    fn of(kind: MetricKind, name: &str) -> MetricDefinition {
        MetricDefinition {
            kind,
            ..counter(name, &[])
        }
    }

    /// The refusal of `definitions` for plugin `p`.
    fn refused(definitions: &[MetricDefinition]) -> String {
        check_all("p", definitions)
            .expect_err("must be refused")
            .to_string()
    }

    /// Asserts the refusal names the plugin, the metric and each of `words`.
    fn assert_refused(definition: MetricDefinition, words: &[&str]) {
        let metric = definition.name.clone();
        let error = refused(&[definition]);
        assert!(
            error.starts_with(&format!("plugin \"p\" metric {}: ", shown(&metric))),
            "{error}"
        );
        for word in words {
            assert!(error.contains(word), "{error:?} does not say {word:?}");
        }
    }

    #[test]
    fn a_well_formed_definition_of_each_kind_passes() {
        let histogram = MetricDefinition {
            buckets: vec![0.1, 1.0],
            label_names: vec!["method".into(), "code".into()],
            ..of(MetricKind::Histogram, "request_seconds")
        };
        let checked = check_all(
            "p",
            &[
                counter("requests_total", &["method"]),
                of(MetricKind::Gauge, "queue_depth"),
                histogram,
            ],
        )
        .unwrap();
        let family = |c: &Checked| family_name("pod-watch", &c.name, c.shape.kind);
        assert_eq!(family(&checked[0]), "herald_plugin_pod_watch__requests");
        assert_eq!(family(&checked[1]), "herald_plugin_pod_watch__queue_depth");
        assert_eq!(checked[2].shape.bounds.as_ref(), &[0.1, 1.0]);
    }

    #[test]
    fn a_histogram_without_buckets_gets_prometheus_defaults() {
        let checked = check_all("p", &[of(MetricKind::Histogram, "latency_seconds")]).unwrap();
        assert_eq!(checked[0].shape.bounds.as_ref(), DEFAULT_BUCKETS);
    }

    #[test]
    fn metric_names_follow_prometheus_rules_without_colons() {
        assert_refused(of(MetricKind::Gauge, "a:b"), &["':'", "recording rules"]);
        assert_refused(of(MetricKind::Gauge, "1abc"), &["not a valid metric name"]);
        assert_refused(of(MetricKind::Gauge, ""), &["not a valid metric name"]);
        assert_refused(of(MetricKind::Gauge, "a-b"), &["not a valid metric name"]);
        assert_refused(of(MetricKind::Gauge, "é"), &["not a valid metric name"]);
        assert_refused(
            of(MetricKind::Gauge, &"a".repeat(MAX_NAME_BYTES + 1)),
            &["129 bytes", "128"],
        );
        check_all("p", &[of(MetricKind::Gauge, "Under_score9")]).unwrap();
        assert_refused(of(MetricKind::Gauge, "_private"), &["start with '_'"]);
        assert_refused(of(MetricKind::Gauge, "a__b"), &["'__'"]);
        assert_refused(of(MetricKind::Gauge, "a_"), &["end in '_'"]);
    }

    #[test]
    fn counters_end_in_total_and_other_kinds_do_not_take_series_suffixes() {
        assert_refused(counter("requests", &[]), &["must end in _total"]);
        assert_refused(counter("_total", &[]), &["start with '_'"]);
        for kind in [MetricKind::Gauge, MetricKind::Histogram] {
            for suffix in ["_total", "_count", "_sum", "_bucket"] {
                assert_refused(
                    of(kind, &format!("things{suffix}")),
                    &[kind.as_str(), suffix],
                );
            }
        }
    }

    #[test]
    fn help_is_one_non_empty_line() {
        let with_help = |help: &str| MetricDefinition {
            help: help.into(),
            ..of(MetricKind::Gauge, "depth")
        };
        assert_refused(with_help(""), &["help text is empty"]);
        assert_refused(with_help("  "), &["help text is empty"]);
        assert_refused(with_help("two\nlines"), &["one line"]);
        assert_refused(with_help("a\ttab"), &["control characters"]);
        for (c, _) in crate::text::tests::HOSTILE {
            assert_refused(with_help(&format!("a{c}b")), &["control characters"]);
        }
        assert_refused(
            with_help(&"h".repeat(MAX_HELP_BYTES + 1)),
            &["more than the 1024"],
        );
        check_all("p", &[with_help(r"Back\slashes are escaped on output.")]).unwrap();
    }

    #[test]
    fn label_names_follow_prometheus_rules_and_leave_the_hosts_alone() {
        let labelled = |kind, label: &str| MetricDefinition {
            label_names: vec![label.into()],
            ..of(
                kind,
                if kind == MetricKind::Counter {
                    "n_total"
                } else {
                    "n"
                },
            )
        };
        let bad = [
            ("1x", "not a valid label name"),
            ("a-b", "not a valid label name"),
            ("", "not a valid label name"),
            ("__name", "reserved for Prometheus"),
            ("plugin", "the host adds the plugin's name"),
            ("quantile", "summaries"),
        ];
        for (label, problem) in bad {
            let definition = labelled(MetricKind::Gauge, label);
            let error = refused(&[definition]);
            assert!(
                error.starts_with("plugin \"p\" metric \"n\": label ")
                    && error.contains(&format!("{label:?}"))
                    && error.contains(problem),
                "{error}"
            );
        }
        assert_refused(labelled(MetricKind::Histogram, "le"), &["\"le\"", "bucket"]);
        check_all("p", &[labelled(MetricKind::Gauge, "le")]).unwrap();
        check_all("p", &[labelled(MetricKind::Counter, "_private")]).unwrap();
        assert_refused(
            MetricDefinition {
                label_names: vec!["a".into(), "b".into(), "a".into()],
                ..of(MetricKind::Gauge, "n")
            },
            &["label \"a\"", "given twice"],
        );
        assert_refused(
            MetricDefinition {
                label_names: (0..=MAX_LABELS).map(|i| format!("l{i}")).collect(),
                ..of(MetricKind::Gauge, "n")
            },
            &["17 labels", "16"],
        );
        assert_refused(
            labelled(MetricKind::Gauge, &"l".repeat(MAX_NAME_BYTES + 1)),
            &["longer than 128"],
        );
    }

    #[test]
    fn histogram_buckets_are_finite_and_strictly_increasing() {
        let with = |buckets: Vec<f64>| MetricDefinition {
            buckets,
            ..of(MetricKind::Histogram, "seconds")
        };
        assert_refused(with(vec![0.1, f64::INFINITY]), &["inf", "not a finite"]);
        assert_refused(with(vec![f64::NAN]), &["NaN", "not a finite"]);
        assert_refused(with(vec![1.0, 1.0]), &["strictly increasing", "1 then 1"]);
        assert_refused(with(vec![2.0, 1.0]), &["strictly increasing", "2 then 1"]);
        assert_refused(
            with((0..=MAX_BUCKETS).map(|i| i as f64).collect()),
            &["65 buckets", "64"],
        );
        check_all("p", &[with(vec![-1.0, 0.0, 0.5])]).unwrap();
    }

    #[test]
    fn only_histograms_have_buckets() {
        assert_refused(
            MetricDefinition {
                buckets: vec![1.0],
                ..counter("n_total", &[])
            },
            &["a counter has no buckets"],
        );
        assert_refused(
            MetricDefinition {
                buckets: vec![1.0],
                ..of(MetricKind::Gauge, "n")
            },
            &["a gauge has no buckets"],
        );
    }

    #[test]
    fn family_names_are_one_to_one_with_plugin_and_metric() {
        // Plugin names never end in `-`, metric names never hold `__` nor
        // start with `_`: the last `__` splits a family name back.
        let pairs = [
            ("a", "b_c"),
            ("a-b", "c"),
            ("a--b", "c"),
            ("a", "b__c"),
            ("ab", "c"),
            ("a", "bc"),
        ];
        let mut seen = HashMap::new();
        for (plugin, metric) in pairs {
            if check(&of(MetricKind::Gauge, metric)).is_err() {
                continue;
            }
            let family = family_name(plugin, metric, MetricKind::Gauge);
            if let Some(other) = seen.insert(family.clone(), (plugin, metric)) {
                panic!("{family} is both {other:?} and {:?}", (plugin, metric));
            }
        }
        assert_eq!(seen.len(), 5, "{seen:?}");
        for (host, _) in crate::telemetry::HOST_FAMILIES {
            assert!(
                !host.contains("__"),
                "{host} could look like a plugin's family"
            );
        }
    }

    #[test]
    fn a_metric_defined_twice_is_refused() {
        let error = refused(&[counter("a_total", &[]), counter("a_total", &["x"])]);
        assert_eq!(error, "plugin \"p\" metric \"a_total\": is defined twice");
    }

    #[test]
    fn metrics_whose_series_collide_within_a_plugin_are_refused() {
        // The gauge `calls` and the counter `calls_total` would both be the
        // family herald_plugin_calls.
        let error = refused(&[counter("calls_total", &[]), of(MetricKind::Gauge, "calls")]);
        assert!(
            error.starts_with("plugin \"p\" metric \"calls\": ")
                && error.contains("herald_plugin_p__calls")
                && error.contains("\"calls_total\""),
            "{error}"
        );
        // A histogram's _bucket series against a counter's family.
        let error = refused(&[
            of(MetricKind::Histogram, "size"),
            counter("size_bucket_total", &[]),
        ]);
        assert!(
            error.contains("herald_plugin_p__size_bucket") && error.contains("\"size\""),
            "{error}"
        );
    }

    #[test]
    fn names_the_host_exports_itself_are_a_plugins_own_in_its_namespace() {
        // herald_plugin_faults_total is the host's; a plugin's `faults_total`
        // is herald_plugin_<plugin>__faults_total, which no host family is.
        let checked = check_all("p", &[counter("faults_total", &[])]).unwrap();
        let family = family_name("p", &checked[0].name, MetricKind::Counter);
        assert_eq!(family, "herald_plugin_p__faults");
        let host = host_exposed_names();
        assert!(host.contains("herald_plugin_faults_total"));
        assert!(
            occupied(&family).iter().all(|name| !host.contains(name)),
            "{family}"
        );
        for name in host {
            assert!(!name.contains("__"), "{name} could look like a plugin's");
        }
    }

    #[test]
    fn a_metric_name_ending_in_an_underscore_is_refused() {
        for kind in [MetricKind::Gauge, MetricKind::Histogram] {
            assert_refused(of(kind, "x_"), &["end in '_'", "separator"]);
        }
        assert_refused(counter("x__total", &[]), &["'__'"]);
        // The reproduction: plugin `a`'s histogram `x_` and plugin `a--x`'s
        // gauges `bucket` and `sum` would share two sample names.
        let histogram = exposed_names("a", "x_", MetricKind::Histogram);
        for gauge in ["bucket", "sum"] {
            let theirs = exposed_names("a--x", gauge, MetricKind::Gauge);
            assert!(theirs.iter().any(|name| histogram.contains(name)));
            check_all("a--x", &[of(MetricKind::Gauge, gauge)]).unwrap();
        }
        assert!(histogram.contains(&"herald_plugin_a__x__bucket".to_owned()));
    }

    /// Every string of up to `max` of `tokens`, joined.
    fn strings(tokens: &[&str], max: usize) -> Vec<String> {
        let mut all = vec![String::new()];
        let mut last = vec![String::new()];
        for _ in 0..max {
            last = last
                .iter()
                .flat_map(|prefix| tokens.iter().map(move |t| format!("{prefix}{t}")))
                .collect();
            all.extend(last.iter().cloned());
        }
        all
    }

    #[test]
    fn every_exposed_name_belongs_to_one_plugin_and_splits_back_at_its_last_separator() {
        // Plugin names and metric names made of the pieces that make names
        // collide: `-` (written `_`), `_`, and the suffixes' words.
        let plugins: Vec<String> = strings(&["a", "x", "-"], 5)
            .into_iter()
            .filter(|p| crate::text::is_dns_label(p))
            .collect();
        let metrics: Vec<String> = strings(&["x", "_", "bucket", "sum", "total"], 3);
        let kinds = [
            MetricKind::Counter,
            MetricKind::Gauge,
            MetricKind::Histogram,
        ];
        let mut owner: HashMap<String, &str> = HashMap::new();
        let mut checked = 0;
        for plugin in &plugins {
            let namespace = format!("{EXPORTED_PREFIX}{}", plugin.replace('-', "_"));
            for metric in &metrics {
                for kind in kinds {
                    if check(&of(kind, metric)).is_err() {
                        continue;
                    }
                    checked += 1;
                    for name in exposed_names(plugin, metric, kind) {
                        // The last `__` splits it back into the plugin.
                        let (before, after) = name.rsplit_once("__").unwrap();
                        assert_eq!(before, namespace, "{name}");
                        assert!(!after.is_empty() && !after.starts_with('_'), "{name}");
                        assert!(!host_exposed_names().contains(&name), "{name}");
                        if let Some(other) = owner.insert(name.clone(), plugin) {
                            assert_eq!(
                                other, plugin,
                                "{name} is both {other:?}'s and {plugin:?}'s"
                            );
                        }
                    }
                }
            }
        }
        assert!(checked > 1000, "{checked}");
        assert!(plugins.contains(&"a--x".to_owned()) && plugins.contains(&"a-x".to_owned()));
    }

    #[test]
    fn too_many_metrics_are_refused() {
        let many: Vec<_> = (0..=MAX_METRICS)
            .map(|i| counter(&format!("m{i}_total"), &[]))
            .collect();
        let error = refused(&many);
        assert_eq!(
            error,
            "plugin \"p\" defines 101 metrics, more than the 100 allowed"
        );
    }

    #[test]
    fn a_definition_serializes_as_the_manifest_shows_it() {
        let json = serde_json::to_value(MetricDefinition {
            buckets: vec![0.5],
            ..of(MetricKind::Histogram, "h")
        })
        .unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "name": "h", "help": "Things counted.", "kind": "histogram",
                "labelNames": [], "buckets": [0.5]
            })
        );
    }

    #[test]
    fn long_or_odd_names_are_shown_quoted_and_cut() {
        assert_eq!(shown("a\nb"), "\"a\\nb\"");
        assert_eq!(shown(&"x".repeat(100)), format!("\"{}\"…", "x".repeat(64)));
    }
}
