//! `tandem run --config FILE.toml` (the daemon) and `tandem clock-sim` (a clock bridge replaying a
//! recorded game's presses).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use tandem_monitor::daemon::{self, ClockSimOptions, DaemonConfig};
use tandem_monitor::publish::TableId;

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The daemon configuration (see docs/daemon.example.toml).
    #[arg(long)]
    config: PathBuf,
    /// Log level on stderr: error, warn, info, debug.
    #[arg(long, default_value = "info")]
    log: String,
}

#[derive(Debug, clap::Args)]
pub struct ClockSimArgs {
    /// The BPGN file whose clock comments give the presses, or a recorded clock timeline
    /// (`.jsonl`, e.g. a simulated game's `clock.jsonl`).
    file: PathBuf,
    /// 1-based game number in the file.
    #[arg(long, default_value_t = 1)]
    game: usize,
    /// 1 is real time, 0 is as fast as possible.
    #[arg(long, default_value_t = 1.0)]
    speed: f64,
    /// The broker as HOST:PORT.
    #[arg(long, default_value = "127.0.0.1:1883")]
    broker: String,
    /// The table id in the topics.
    #[arg(long, default_value = "t1")]
    table: String,
}

/// One line per record on stderr, for the daemon's log lines.
struct StderrLogger;

impl log::Log for StderrLogger {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.target().starts_with("tandem")
    }

    fn log(&self, record: &log::Record) {
        if self.enabled(record.metadata()) {
            eprintln!("{:5} {}", record.level(), record.args());
        }
    }

    fn flush(&self) {}
}

fn init_log(level: &str) -> anyhow::Result<()> {
    let filter: log::LevelFilter = level
        .parse()
        .with_context(|| format!("--log {level:?}: expected error, warn, info or debug"))?;
    static LOGGER: StderrLogger = StderrLogger;
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(filter);
    Ok(())
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

/// SIGINT or SIGTERM.
async fn signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            log::error!("cannot watch SIGTERM: {e}");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => log::info!("SIGINT: shutting down"),
        _ = term.recv() => log::info!("SIGTERM: shutting down"),
    }
}

pub fn run(args: RunArgs) -> anyhow::Result<()> {
    init_log(&args.log)?;
    let config = DaemonConfig::load(&args.config)?;
    let rt = runtime()?;
    let summary = rt.block_on(async {
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<daemon::Ready>();
        tokio::spawn(async move {
            if let Ok(ready) = ready_rx.await {
                log::info!(
                    "running: broker 127.0.0.1:{}{}",
                    ready.broker_port,
                    ready
                        .http
                        .map(|a| format!(", http://{a}/health"))
                        .unwrap_or_default()
                );
            }
        });
        daemon::run_daemon(config, signal(), Some(ready_tx)).await
    })?;
    for t in &summary.tables {
        println!(
            "table {}: game {}, last event {}, result {}",
            t.id,
            t.game,
            t.last_event_id.as_deref().unwrap_or("-"),
            t.result
                .as_ref()
                .map(|r| format!(
                    "{} ({})",
                    r["result"].as_str().unwrap_or("?"),
                    r["reason"].as_str().unwrap_or("?")
                ))
                .unwrap_or_else(|| "none".into())
        );
    }
    println!(
        "events {} published, {} acknowledged, {} pending, {} inputs rejected, {} frames",
        summary.events,
        summary.publisher.acked,
        summary.publisher.pending,
        summary.rejected,
        summary.frames
    );
    let ms = |d: Option<std::time::Duration>| {
        d.map(|d| format!("{:.1} ms", d.as_secs_f64() * 1000.0))
            .unwrap_or_else(|| "-".into())
    };
    println!(
        "ran {:.1} s, publish→PUBACK p50 {}, p99 {}",
        summary.elapsed.as_secs_f64(),
        ms(summary.ack_p50),
        ms(summary.ack_p99)
    );
    Ok(())
}

pub fn clock_sim(args: ClockSimArgs) -> anyhow::Result<()> {
    init_log("warn")?;
    let (host, port) = args
        .broker
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h.to_string(), p.parse::<u16>().ok()?)))
        .with_context(|| format!("--broker {:?}: expected HOST:PORT", args.broker))?;
    if !(args.speed.is_finite() && args.speed >= 0.0) {
        anyhow::bail!("--speed must be 0 (as fast as possible) or positive");
    }
    let table = TableId::new(&args.table).with_context(|| format!("--table {:?}", args.table))?;
    let presses = if args.file.extension().is_some_and(|e| e == "jsonl") {
        daemon::load_clock_presses(&args.file)?
    } else {
        daemon::clock_timeline(&daemon::load_game(&args.file, args.game)?)
    };
    if presses.is_empty() {
        anyhow::bail!(
            "{} (game {}): no clock presses (a BPGN needs a TimeControl tag and clock comments)",
            args.file.display(),
            args.game
        );
    }
    let options = ClockSimOptions {
        host,
        port,
        table,
        speed: args.speed,
        client_id: format!("tandem-clock-sim-{}-{}", args.table, std::process::id()),
        drain_timeout: Duration::from_secs(30),
    };
    let summary = runtime()?.block_on(daemon::run_clock_sim(&presses, &options))?;
    println!(
        "{} presses sent, {} acknowledged",
        summary.presses, summary.acked
    );
    if summary.acked < summary.presses {
        anyhow::bail!(
            "the broker acknowledged only {} of {} presses",
            summary.acked,
            summary.presses
        );
    }
    Ok(())
}
