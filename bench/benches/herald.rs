//! `cargo bench -p herald-bench [-- --quick] [--only B1,B3] [--b1-noop-only]
//! [--b15-latency-only]`:
//! runs Herald's benchmark suite and prints its table (Markdown) on stdout.

use herald_bench::alloc::CountingAllocator;
use herald_bench::{Settings, run, table};
use std::time::Instant;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn main() {
    let mut settings = Settings::full();
    let compiler = || Some(env!("CARGO_BIN_EXE_herald-child").into());
    settings.compiler_program = compiler();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => {
                let only = std::mem::take(&mut settings.only);
                settings = Settings::quick();
                settings.only = only;
                settings.compiler_program = compiler();
            }
            "--only" => {
                let ids = args.next().expect("--only needs ids, e.g. B1,B3");
                settings.only = ids.split(',').map(str::to_owned).collect();
            }
            "--b1-noop-only" => settings.b1_noop_only = true,
            "--b15-latency-only" => settings.b15_latency_only = true,
            // Cargo passes `--bench`; filters are not supported.
            "--bench" => {}
            other => eprintln!("herald-bench: ignoring argument {other:?}"),
        }
    }
    let started = Instant::now();
    let rows = run(&settings);
    println!(
        "\n## Herald benchmarks ({} run, {} repetitions, {:.0} s)\n",
        if settings.quick { "quick" } else { "full" },
        settings.repetitions,
        started.elapsed().as_secs_f64()
    );
    println!("{}", table::render(&rows));
}
