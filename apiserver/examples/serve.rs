//! Run the embedded API server from the command line (a development aid; the host's
//! `herald apiserver` command is the supported entry point).
//!
//! `cargo run -p herald-apiserver --example serve -- [ADDR] [SEED_DIR] [KUBECONFIG_OUT] [PERSIST_DIR]`

use std::path::PathBuf;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut config = herald_apiserver::ApiServerConfig::default();
    if let Some(addr) = args.first() {
        config.listen = addr.parse()?;
    }
    if let Some(seed) = args.get(1).filter(|s| !s.is_empty()) {
        config.seed_dirs.push(PathBuf::from(seed));
    }
    config.persist_dir = args.get(3).map(PathBuf::from);
    let server = herald_apiserver::start(config).await?;
    let kubeconfig = PathBuf::from(args.get(2).map_or("kubeconfig.yaml", String::as_str));
    server.write_kubeconfig(&kubeconfig)?;
    println!(
        "serving {} (kubeconfig {})",
        server.url(),
        kubeconfig.display()
    );
    tokio::signal::ctrl_c().await?;
    server.shutdown().await;
    Ok(())
}
