//! `tandem broker`: runs the embedded MQTT broker on 127.0.0.1 until Ctrl-C (for clock bridges,
//! arbiter tools and demos on a machine without Mosquitto).

use anyhow::Context;
use tandem_monitor::publish::EmbeddedBroker;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 1883)]
    port: u16,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let broker = EmbeddedBroker::start(args.port)?;
    println!(
        "embedded MQTT broker listening on {} (Ctrl-C stops it)",
        broker.addr()
    );
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("tokio runtime")?
        .block_on(tokio::signal::ctrl_c())
        .context("waiting for Ctrl-C")?;
    broker.stop();
    println!("embedded MQTT broker stopped");
    Ok(())
}
