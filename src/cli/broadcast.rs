//! `tandem broadcast`: replay a recorded game into the live feed and serve it, or render its files.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use tandem_monitor::broadcast::{
    BroadcastConfig, BroadcastHandle, BroadcastServer, GameInfo, LiveGame,
};
use tandem_monitor::engine::BoardId;
use tandem_monitor::engine::bpgn::{self, BpgnGame};
use tandem_monitor::rules::{Event, EventBody, RuleSet, replay_game};

#[derive(Debug, clap::Args)]
pub struct BroadcastArgs {
    #[command(subcommand)]
    command: BroadcastCommand,
}

#[derive(Debug, clap::Subcommand)]
enum BroadcastCommand {
    /// Replay a game in (accelerated) real time from its clock comments and serve the live feed.
    Replay(ReplayArgs),
    /// Write the final game.bpgn, a.pgn and b.pgn of a replayed game.
    Render(RenderArgs),
}

#[derive(Debug, clap::Args)]
struct GameArgs {
    /// A BPGN file.
    file: PathBuf,
    /// Which game of the file, counting from 1.
    #[arg(long, default_value_t = 1)]
    game: usize,
    /// Rule set: a preset name or a TOML file.
    #[arg(long, default_value = "fics")]
    rules: String,
    /// Table id in the events and URLs.
    #[arg(long, default_value = "t1")]
    table: String,
}

#[derive(Debug, clap::Args)]
struct ReplayArgs {
    #[command(flatten)]
    game: GameArgs,
    /// Address to serve on (overrides the configuration's `listen`).
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Replay speed: 10 plays ten times faster than the clocks ran.
    #[arg(long, default_value_t = 1.0)]
    speed: f64,
    /// Broadcast configuration (TOML: listen, event, site, date, round, backlog, [[tables]]).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Stop serving when the replay is over (default: serve until Ctrl-C).
    #[arg(long)]
    exit: bool,
}

#[derive(Debug, clap::Args)]
struct RenderArgs {
    #[command(flatten)]
    game: GameArgs,
    /// Directory for game.bpgn, a.pgn and b.pgn (created if missing).
    #[arg(long)]
    out: PathBuf,
}

pub fn run(args: BroadcastArgs) -> anyhow::Result<()> {
    match args.command {
        BroadcastCommand::Replay(args) => replay(args),
        BroadcastCommand::Render(args) => render(args),
    }
}

/// The chosen game of the file and its events through the referee.
fn load(args: &GameArgs) -> anyhow::Result<(BpgnGame, Vec<Event>)> {
    let bytes = std::fs::read(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let mut games = bpgn::parse_bpgn(&bytes).with_context(|| format!("{}", args.file.display()))?;
    if args.game == 0 || args.game > games.len() {
        bail!(
            "{} holds {} game(s); --game must be 1..={}",
            args.file.display(),
            games.len(),
            games.len()
        );
    }
    let game = games.swap_remove(args.game - 1);
    let rules = RuleSet::load(&args.rules)?;
    let events = replay_game(&args.table, args.game as u32, &rules, &game)
        .with_context(|| format!("game {}", args.game))?;
    Ok((game, events))
}

fn render(args: RenderArgs) -> anyhow::Result<()> {
    let (game, events) = load(&args.game)?;
    let mut live = LiveGame::new(&args.game.table, GameInfo::from_bpgn(&game));
    for event in &events {
        live.apply(event)
            .with_context(|| format!("event {}", event.id))?;
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    for (name, text) in [
        ("game.bpgn", live.bpgn()),
        ("a.pgn", live.board_pgn(BoardId::A)),
        ("b.pgn", live.board_pgn(BoardId::B)),
    ] {
        let path = args.out.join(name);
        std::fs::write(&path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        println!("{}", path.display());
    }
    Ok(())
}

fn replay(args: ReplayArgs) -> anyhow::Result<()> {
    if !(args.speed.is_finite() && args.speed > 0.0) {
        bail!("--speed must be a positive number, not {}", args.speed);
    }
    let mut config = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            BroadcastConfig::from_toml_str(&text).with_context(|| format!("{}", path.display()))?
        }
        None => BroadcastConfig::default(),
    };
    if let Some(listen) = args.listen {
        config.listen = listen;
    }
    let (game, events) = load(&args.game)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let server = BroadcastServer::bind(&config).await?;
        let handle = server.handle();
        handle.insert_game(LiveGame::new(&args.game.table, GameInfo::from_bpgn(&game)));
        let base = format!("http://{}/tables/{}", server.local_addr(), args.game.table);
        eprintln!(
            "serving {base}/game.bpgn, {base}/a.pgn, {base}/b.pgn, {base}/events \
             ({} events at {}x)",
            events.len(),
            args.speed
        );
        let finished = tokio::select! {
            _ = pace(&handle, &events, args.speed) => true,
            _ = tokio::signal::ctrl_c() => false,
        };
        if finished && !args.exit {
            eprintln!("replay finished; serving until Ctrl-C");
            tokio::signal::ctrl_c()
                .await
                .context("cannot wait for Ctrl-C")?;
        }
        server.shutdown().await?;
        Ok(())
    })
}

/// Publishes the events at their time stamps divided by `speed`, printing each move.
async fn pace(handle: &BroadcastHandle, events: &[Event], speed: f64) {
    let start = tokio::time::Instant::now();
    for event in events {
        let due = Duration::from_secs_f64(event.ts as f64 / 1000.0 / speed);
        tokio::time::sleep_until(start + due).await;
        if let Err(e) = handle.publish(event) {
            eprintln!("warning: {e}");
        }
        match &event.body {
            EventBody::Move {
                number, san, color, ..
            } => {
                let board = event.board.map(|b| b.to_string()).unwrap_or_default();
                let dots = if color.index() == 0 { "." } else { "..." };
                // The feed goes on if stdout is closed (piped into `head`).
                let _ = writeln!(std::io::stdout(), "{board} {number}{dots} {san}");
            }
            EventBody::Result { result, text, .. } => {
                let _ = writeln!(std::io::stdout(), "result {}: {text}", result.as_str());
            }
            _ => {}
        }
    }
}
