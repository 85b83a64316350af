//! `tandem referee` and `tandem replay`: the rules engine and referee from the command line.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, bail};
use tandem_monitor::engine::bpgn;
use tandem_monitor::rules::{Event, EventBody, Referee, RuleSet, TimedAction};

#[derive(Debug, clap::Args)]
pub struct RefereeArgs {
    /// A JSON file `{"rules": ..., "start": ..., "actions": [...]}` (see docs/referee.md).
    file: PathBuf,
    /// Rule set: a preset name or a TOML file; overrides the file's `rules`.
    #[arg(long)]
    rules: Option<String>,
    /// Print events as JSON lines (the default prints one readable line per event).
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// A BPGN file with one or more games.
    file: PathBuf,
    /// Rule set: a preset name or a TOML file.
    #[arg(long, default_value = "fics")]
    rules: String,
    /// Print events as JSON lines.
    #[arg(long)]
    json: bool,
    /// Table id used in the events.
    #[arg(long, default_value = "t1")]
    table: String,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Script {
    rules: Option<String>,
    table: Option<String>,
    start: Option<String>,
    actions: Vec<serde_json::Value>,
}

pub fn referee(args: RefereeArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let script: Script = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a referee script", args.file.display()))?;
    let rules_name = args
        .rules
        .or(script.rules)
        .unwrap_or_else(|| "tandem-2024".to_string());
    let rules = RuleSet::load(&rules_name)?;
    let actions = script
        .actions
        .iter()
        .enumerate()
        .map(|(i, v)| TimedAction::from_json(v, i))
        .collect::<Result<Vec<_>, _>>()?;
    let table = script.table.as_deref().unwrap_or("t1");
    let mut referee = Referee::new(table, 1, rules, script.start.as_deref())?;
    let mut out = std::io::stdout().lock();
    for action in actions {
        for event in referee.apply(action) {
            print_event(&mut out, &event, args.json)?;
        }
    }
    Ok(())
}

pub fn replay(args: ReplayArgs) -> anyhow::Result<()> {
    let bytes = std::fs::read(&args.file)
        .with_context(|| format!("cannot read {}", args.file.display()))?;
    let rules = RuleSet::load(&args.rules)?;
    let games = bpgn::parse_bpgn(&bytes).with_context(|| format!("{}", args.file.display()))?;
    if games.is_empty() {
        bail!("{} holds no game", args.file.display());
    }
    let mut out = std::io::stdout().lock();
    for (index, game) in games.iter().enumerate() {
        for event in tandem_monitor::rules::replay_game(&args.table, index as u32 + 1, &rules, game)
            .with_context(|| format!("game {}", index + 1))?
        {
            print_event(&mut out, &event, args.json)?;
        }
    }
    Ok(())
}

fn print_event(out: &mut impl Write, event: &Event, json: bool) -> anyhow::Result<()> {
    if json {
        serde_json::to_writer(&mut *out, event)?;
        writeln!(out)?;
        return Ok(());
    }
    let board = event.board.map(|b| b.to_string()).unwrap_or_default();
    let line = match &event.body {
        EventBody::Move {
            number, san, color, ..
        } => format!(
            "{board} {number}{} {san}",
            if color.index() == 0 { "." } else { "..." }
        ),
        EventBody::IllegalMove {
            uci,
            text,
            consequence,
            ..
        } => format!("{board} illegal move {uci}: {text} ({consequence:?})"),
        EventBody::Result { result, text, .. } => format!("result {}: {text}", result.as_str()),
        other => format!(
            "{board} {}",
            serde_json::to_string(other).unwrap_or_default()
        ),
    };
    writeln!(out, "{}", line.trim_start())?;
    Ok(())
}
