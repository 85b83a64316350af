//! `tandem eval tracker-sim`: the tracker on simulated observations of recorded games.

use std::path::PathBuf;

use anyhow::Context;
use tandem_monitor::engine::bpgn;
use tandem_monitor::rules::RuleSet;
use tandem_monitor::tracker::TrackerConfig;
use tandem_monitor::tracker::eval::{EvalOptions, eval_games};

/// What `tandem eval` can evaluate.
#[derive(Debug, clap::Subcommand)]
pub enum EvalCommand {
    /// Run the tracker on simulated camera observations of every game of a BPGN file and compare
    /// the committed moves with the record.
    TrackerSim(TrackerSimArgs),
    /// Watch a simulated game directory (frames → vision → tracker) and compare with its truth.
    Game(super::watch::EvalGameArgs),
    /// Watch several simulated game directories one after another and sum their figures
    /// (moves, games all right, alerts, incidents, pockets, latency).
    Games(super::watch::EvalGamesArgs),
    /// Score the motion detector of a simulated game directory against the truth's hands.
    Motion(super::watch::EvalMotionArgs),
    /// Adapt the square classifier on a labelled set's `adapt` rows and score its `test` rows.
    Squares(super::vision::SquaresArgs),
    /// Count the pocket patches of a labelled set (pockets.csv) and score exact counts.
    Pockets(super::vision::PocketsArgs),
    /// Score the tracker's move prior (how likely a player is to make each legal move) on
    /// recorded games, and optionally fit its weights on others.
    MovePrior(MovePriorArgs),
}

#[derive(Debug, clap::Args)]
pub struct MovePriorArgs {
    /// A BPGN file with recorded games.
    #[arg(long)]
    games: PathBuf,
    /// Fit the weights on these games (0-based, `START..END`, END excluded) and score them too.
    #[arg(long)]
    fit: Option<String>,
    /// Score on these games (`START..END`; default: all games outside `--fit`).
    #[arg(long)]
    test: Option<String>,
    /// L2 penalty per position on the fitted weights.
    #[arg(long, default_value_t = 0.001)]
    l2: f64,
    /// Rule set: a preset name or a TOML file.
    #[arg(long, default_value = "fics")]
    rules: String,
    /// Print the report as one JSON object.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub struct TrackerSimArgs {
    /// A BPGN file with one or more games.
    #[arg(long)]
    games: PathBuf,
    /// Print the report as one JSON object (the default prints a short summary).
    #[arg(long)]
    json: bool,
    /// Seed of the simulator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Per square and frame: probability of a one-frame misread (a look-alike class).
    #[arg(long)]
    misread_rate: Option<f64>,
    /// Standard deviation of the classifier noise on the logits (signal is 6).
    #[arg(long)]
    noise: Option<f32>,
    /// Per board and second: probability that a persistent misread of one square starts.
    #[arg(long)]
    persistent_rate: Option<f64>,
    /// Inject pocket incidents: per capture, probability that the piece is not handed over, and
    /// per board and second, probability that a player hides a pocket piece.
    #[arg(long)]
    incident_rate: Option<f64>,
    /// Shortest time between two moves on one board in the simulation (ms); recorded online
    /// premoves faster than this are delayed (default 300).
    #[arg(long)]
    min_move_ms: Option<u64>,
    /// Feed the simulated clock presses (moves are committed at presses).
    #[arg(long)]
    clock: bool,
    /// Evaluate at most this many games.
    #[arg(long)]
    max_games: Option<usize>,
    /// Rule set: a preset name or a TOML file.
    #[arg(long, default_value = "fics")]
    rules: String,
    /// Tracker configuration overrides (TOML).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Evaluate only the game with this index (0-based; simulated exactly as in a full run).
    #[arg(long)]
    game: Option<usize>,
    /// Write every tracker decision, every event and the true moves of each game to FILE as
    /// JSON lines (each with `game` and `trace`: decision, event or truth).
    #[arg(long)]
    trace: Option<PathBuf>,
}

pub fn eval(cmd: EvalCommand) -> anyhow::Result<()> {
    match cmd {
        EvalCommand::TrackerSim(args) => tracker_sim(args),
        EvalCommand::Game(args) => super::watch::eval_game_cmd(args),
        EvalCommand::Games(args) => super::watch::eval_games_cmd(args),
        EvalCommand::Motion(args) => super::watch::eval_motion_cmd(args),
        EvalCommand::Squares(args) => super::vision::eval_squares(args),
        EvalCommand::Pockets(args) => super::vision::eval_pockets(args),
        EvalCommand::MovePrior(args) => move_prior(args),
    }
}

/// `START..END` as a range of game indices.
fn game_range(text: &str, games: usize) -> anyhow::Result<std::ops::Range<usize>> {
    let (a, b) = text
        .split_once("..")
        .with_context(|| format!("{text:?} is not a range START..END"))?;
    let a: usize = a
        .trim()
        .parse()
        .with_context(|| format!("bad start in {text:?}"))?;
    let b: usize = b
        .trim()
        .parse()
        .with_context(|| format!("bad end in {text:?}"))?;
    anyhow::ensure!(
        a < b && b <= games,
        "range {text:?} must be non-empty and within the file's {games} games"
    );
    Ok(a..b)
}

fn move_prior(args: MovePriorArgs) -> anyhow::Result<()> {
    use tandem_monitor::tracker::plausible::{self, FEATURE_NAMES, MovePrior, Sample};
    let bytes = std::fs::read(&args.games)
        .with_context(|| format!("cannot read {}", args.games.display()))?;
    let games = bpgn::parse_bpgn(&bytes)
        .with_context(|| format!("{} is not a BPGN file", args.games.display()))?;
    anyhow::ensure!(
        args.l2.is_finite() && args.l2 >= 0.0,
        "--l2 must be a non-negative number"
    );
    let variant = RuleSet::load(&args.rules)?.variant();
    let fit = args
        .fit
        .as_deref()
        .map(|t| game_range(t, games.len()))
        .transpose()?;
    let test = args
        .test
        .as_deref()
        .map(|t| game_range(t, games.len()))
        .transpose()?;
    let in_test = |i: usize| match (&test, &fit) {
        (Some(t), _) => t.contains(&i),
        (None, Some(f)) => !f.contains(&i),
        (None, None) => true,
    };
    let (mut fit_set, mut test_set): (Vec<Sample>, Vec<Sample>) = (Vec::new(), Vec::new());
    let mut skipped = Vec::new();
    for (i, g) in games.iter().enumerate() {
        let samples = match plausible::samples_from_game(g, &variant) {
            Ok(s) => s,
            Err(e) => {
                skipped.push(format!("game {i}: {e}"));
                continue;
            }
        };
        if fit.as_ref().is_some_and(|f| f.contains(&i)) {
            fit_set.extend(samples.iter().cloned());
        }
        if in_test(i) {
            test_set.extend(samples);
        }
    }
    anyhow::ensure!(!test_set.is_empty(), "no positions to score");
    let current = MovePrior::default();
    let uniform = MovePrior {
        weights: [0.0; plausible::FEATURES],
    };
    let fitted = (!fit_set.is_empty()).then(|| MovePrior::fit(&fit_set, args.l2, 1500));
    let score = |m: &MovePrior, set: &[Sample]| -m.log_likelihood(set);
    let by_name = |m: &MovePrior| {
        FEATURE_NAMES
            .iter()
            .zip(m.weights)
            .map(|(n, w)| (n.to_string(), w))
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let report = serde_json::json!({
        "skipped": skipped,
        "test_positions": test_set.len(),
        "fit_positions": fit_set.len(),
        "log_loss": {
            "uniform": score(&uniform, &test_set),
            "current": score(&current, &test_set),
            "fitted": fitted.map(|m| score(&m, &test_set)),
            "fitted_on_fit_set": fitted.map(|m| score(&m, &fit_set)),
        },
        "current": by_name(&current),
        "fitted": fitted.as_ref().map(by_name),
        "fitted_array": fitted.map(|m| m.weights.to_vec()),
    });
    if args.json {
        println!("{report}");
    } else {
        let fitted_text = fitted.map_or(String::new(), |m| {
            format!(
                ", fitted {:.3} ({:.3} on the {} positions fitted on)",
                score(&m, &test_set),
                score(&m, &fit_set),
                fit_set.len()
            )
        });
        println!(
            "{} positions scored ({} games skipped); log-loss per move: uniform {:.3}, current {:.3}{fitted_text}",
            test_set.len(),
            skipped.len(),
            score(&uniform, &test_set),
            score(&current, &test_set),
        );
    }
    Ok(())
}

fn tracker_sim(args: TrackerSimArgs) -> anyhow::Result<()> {
    let bytes = std::fs::read(&args.games)
        .with_context(|| format!("cannot read {}", args.games.display()))?;
    let mut games = bpgn::parse_bpgn(&bytes)
        .with_context(|| format!("{} is not a BPGN file", args.games.display()))?;
    if let Some(n) = args.max_games {
        games.truncate(n);
    }
    let mut opts = EvalOptions {
        rules: RuleSet::load(&args.rules)?,
        seed: args.seed,
        clock: args.clock,
        trace: args.trace.is_some(),
        only_game: args.game,
        ..EvalOptions::default()
    };
    if let Some(g) = args.game {
        anyhow::ensure!(
            g < games.len(),
            "--game {g}: {} holds {} games (0-based)",
            args.games.display(),
            games.len()
        );
    }
    if let Some(path) = &args.config {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        opts.tracker = TrackerConfig::from_toml(&text)?;
    }
    if let Some(r) = args.misread_rate {
        anyhow::ensure!((0.0..=1.0).contains(&r), "--misread-rate must be in [0, 1]");
        opts.sim.confusion_rate = r;
    }
    if let Some(n) = args.noise {
        anyhow::ensure!(
            n.is_finite() && n >= 0.0,
            "--noise must be a non-negative number"
        );
        opts.sim.noise = n;
    }
    if let Some(r) = args.persistent_rate {
        anyhow::ensure!(
            (0.0..=1.0).contains(&r),
            "--persistent-rate must be in [0, 1]"
        );
        opts.sim.persistent_misread_rate = r;
    }
    if let Some(ms) = args.min_move_ms {
        opts.sim.min_move_ms = ms;
    }
    if let Some(r) = args.incident_rate {
        anyhow::ensure!(
            (0.0..=1.0).contains(&r),
            "--incident-rate must be in [0, 1]"
        );
        opts.sim.handover_missing_rate = r;
        opts.sim.hidden_pocket_rate = r / 10.0;
    }
    let report = eval_games(&games, &opts);
    if let Some(path) = &args.trace {
        let lines: Vec<&serde_json::Value> =
            report.per_game.iter().flat_map(|g| &g.trace).collect();
        super::watch::write_json_lines(path, &lines)?;
    }
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        let by_kind: Vec<String> = report
            .incidents_by_kind
            .iter()
            .map(|(kind, k)| format!("{kind} {}/{}", k.detected, k.injected))
            .collect();
        println!(
            "games {} (skipped {}), moves right {}/{} ({:.4}; sure {}/{}, guesses {}/{}), games all right {} ({:.3}), desyncs {}, false alerts {}, incidents {}/{} [{}], latency p50 {:.3} ms p99 {:.3} ms",
            report.games,
            report.skipped.len(),
            report.moves_right,
            report.moves_truth,
            report.move_accuracy,
            report.readings.sure.right,
            report.readings.sure.committed,
            report.readings.guessed.right,
            report.readings.guessed.committed,
            report.games_all_right,
            report.games_all_right_fraction,
            report.desyncs,
            report.false_alerts,
            report.incidents_detected,
            report.incidents_injected,
            by_kind.join(", "),
            report.latency_ms_p50,
            report.latency_ms_p99
        );
    }
    Ok(())
}
