//! What a run measures and how much: the full suite or the quick smoke run.

/// Sizes and repetitions of one run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The quick smoke run (tiny sizes; the numbers mean nothing).
    pub quick: bool,
    /// Repetitions of each measurement.
    pub repetitions: usize,
    /// Only these benchmark ids (`B1` … `B14`); empty means all.
    pub only: Vec<String>,
    /// B1: notifications per repetition for the no-op plugin.
    pub b1_noop_notifications: usize,
    /// B1: notifications per repetition for the parsing plugins.
    pub b1_parse_notifications: usize,
    /// B1: only the no-op plugin on 4 KB Pods (for profiling the host's
    /// path under callgrind without compiling the parsing plugins).
    pub b1_noop_only: bool,
    /// B15: only the latency rows, not the memory row (which starts two
    /// daemons per repetition with many plugins each).
    pub b15_latency_only: bool,
    /// B2: plugin counts, ascending.
    pub b2_plugins: Vec<usize>,
    /// B2: events per step.
    pub b2_events: usize,
    /// B8: plugin counts, ascending.
    pub b8_plugins: Vec<usize>,
    /// B8: events per step.
    pub b8_events: usize,
    /// B3: cache sizes (objects).
    pub b3_objects: Vec<usize>,
    /// B3: largest size at which the unstripped kube-runtime stores are also
    /// built (they hold `managedFields` as JSON maps: several GB at 100k).
    pub b3_unstripped_max: usize,
    /// B4: write rates (events per second).
    pub b4_rates: Vec<u32>,
    /// B4: seconds of writes per phase.
    pub b4_seconds: f64,
    /// B4: plugins.
    pub b4_plugins: usize,
    /// B4: Pods written to in turn.
    pub b4_pool: usize,
    /// B5: cached objects the late plugin joins over.
    pub b5_objects: usize,
    /// B5: live events per second while it joins.
    pub b5_rate: u32,
    /// B5: the other (already running) plugins.
    pub b5_others: usize,
    /// B7: objects listed at start-up.
    pub b7_objects: usize,
    /// B7: no-op plugins started.
    pub b7_plugins: usize,
    /// B11: cold compiles of each component (each takes seconds for a
    /// Python or JavaScript component).
    pub b11_compile_repetitions: usize,
    /// B11: calls each instance handles before its per-call time is
    /// taken. A fresh instance's language runtime grows its heap over its
    /// first calls (the Go runtime's over about a thousand 4 KB Pods), a
    /// cost of starting, reported beside the per-call figure, not in it.
    pub b11_warm_up_calls: usize,
    /// B11: calls per repetition on the Rust fixtures.
    pub b11_rust_calls: usize,
    /// B11: calls per repetition on the Python, JavaScript and Go
    /// components. As many as on the Rust fixtures in a full run: a
    /// collector runs every few hundred calls in these runtimes, and 2,000
    /// calls (the count until 2026-11-30) put a Go no-op anywhere from 2.07
    /// to 2.55 µs depending on where its cycles fell, where 20,000 stay
    /// within 2.09–2.19.
    pub b11_sdk_calls: usize,
    /// B11: live instances per language for the RSS per instance.
    pub b11_instances: usize,
    /// B14: plugins the replicas divide.
    pub b14_plugins: usize,
    /// B14: writes per repetition of the throughput comparison.
    pub b14_events: usize,
    /// B14: their rate, per second.
    pub b14_rate: u32,
    /// B14: ConfigMaps of about 4 KiB in each plugin's namespace, for the
    /// memory comparison.
    pub b14_objects: usize,
    /// B15: the rates of reviews, per second.
    pub b15_rates: Vec<u32>,
    /// B15: seconds of reviews per phase.
    pub b15_seconds: f64,
    /// B15: the plugin counts the memory row's slope is taken between.
    pub b15_memory_plugins: (usize, usize),
    /// B17: clusters (embedded API servers) started over.
    pub b17_clusters: usize,
    /// B17: Pods in each.
    pub b17_objects: usize,
    /// B18: Deployments each controller reconciles (one summary each).
    pub b18_deployments: usize,
    /// B11: the `herald` command line to compile in a child process with
    /// (`herald-child`, a binary of this crate: the bench and the quick test
    /// set it from `CARGO_BIN_EXE_herald-child`).
    pub compiler_program: Option<std::path::PathBuf>,
}

impl Settings {
    /// The full suite (under 15 minutes on two cores).
    pub fn full() -> Self {
        Settings {
            quick: false,
            repetitions: 5,
            only: Vec::new(),
            b1_noop_notifications: 20_000,
            b1_parse_notifications: 3_000,
            b1_noop_only: false,
            b15_latency_only: false,
            b2_plugins: vec![1, 10, 100],
            b2_events: 2_000,
            b8_plugins: vec![1, 100, 1_000],
            b8_events: 1_000,
            b3_objects: vec![10_000, 100_000],
            b3_unstripped_max: 10_000,
            b4_rates: vec![1_000, 5_000],
            b4_seconds: 2.0,
            b4_plugins: 10,
            b4_pool: 1_000,
            b5_objects: 100_000,
            b5_rate: 2_000,
            b5_others: 3,
            b7_objects: 10_000,
            b7_plugins: 3,
            b11_compile_repetitions: 3,
            b11_warm_up_calls: 2_000,
            b11_rust_calls: 20_000,
            b11_sdk_calls: 20_000,
            b11_instances: 20,
            b14_plugins: 6,
            b14_events: 2_000,
            b14_rate: 500,
            b14_objects: 2_000,
            b15_rates: vec![100, 1_000],
            b15_seconds: 5.0,
            b15_memory_plugins: (4, 24),
            b17_clusters: 4,
            b17_objects: 10_000,
            b18_deployments: 1_000,
            compiler_program: None,
        }
    }

    /// The smoke run: every benchmark, tiny sizes, two repetitions.
    pub fn quick() -> Self {
        Settings {
            quick: true,
            repetitions: 2,
            only: Vec::new(),
            b1_noop_notifications: 200,
            b1_parse_notifications: 40,
            b1_noop_only: false,
            b15_latency_only: false,
            b2_plugins: vec![1, 2, 4],
            b2_events: 50,
            b8_plugins: vec![1, 3, 6],
            b8_events: 20,
            b3_objects: vec![100, 400],
            b3_unstripped_max: 400,
            b4_rates: vec![200],
            b4_seconds: 0.25,
            b4_plugins: 2,
            b4_pool: 20,
            b5_objects: 500,
            b5_rate: 200,
            b5_others: 1,
            b7_objects: 100,
            b7_plugins: 3,
            b11_compile_repetitions: 1,
            b11_warm_up_calls: 20,
            b11_rust_calls: 200,
            b11_sdk_calls: 20,
            b11_instances: 2,
            b14_plugins: 3,
            b14_events: 200,
            b14_rate: 400,
            b14_objects: 20,
            b15_rates: vec![100],
            b15_seconds: 0.2,
            b15_memory_plugins: (1, 3),
            b17_clusters: 2,
            b17_objects: 100,
            b18_deployments: 20,
            compiler_program: None,
        }
    }

    /// Whether benchmark `id` (e.g. `B3`) runs.
    pub fn selected(&self, id: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o.eq_ignore_ascii_case(id))
    }
}
