//! `tandem evidence`: verify, export and show a game's tamper-evident evidence.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use tandem_monitor::evidence::{
    self, ChainHead, LOG_FILE, VerifyOptions, VerifyReport, VerifyingKey, list_games,
};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Check a game directory (or every game under a root, or an exported zip) for changed,
    /// removed or reordered records and frames. Exit 0 when intact, 1 otherwise.
    Verify {
        /// A game directory (holding log.jsonl), an evidence root, or an exported .zip.
        dir: PathBuf,
        /// Require this Ed25519 public key (64 hex digits, or a file holding them).
        #[arg(long)]
        pubkey: Option<String>,
        /// Require this published chain head, `SEQ:SHA256` (detects cut-off or rewritten tails).
        #[arg(long)]
        head: Option<String>,
        /// Also print notes (unfinished game, truncated tail, unreferenced frame files).
        #[arg(short, long)]
        verbose: bool,
    },
    /// Bundle one game (log, frames, README.txt) into a zip for an arbiter.
    Export {
        /// The game directory.
        game_dir: PathBuf,
        /// The zip file to write.
        #[arg(long)]
        out: PathBuf,
    },
    /// Print a game's timeline and optionally write one contact sheet PNG per incident.
    Show {
        /// The game directory.
        dir: PathBuf,
        /// Directory for the contact sheets.
        #[arg(long)]
        sheets: Option<PathBuf>,
    },
    /// Create a new per-table signing key file (32-byte secret as hex) and print its public key.
    Keygen {
        /// The key file to create (never overwritten).
        file: PathBuf,
    },
    /// Delete the oldest finished games under a root, keeping KEEP of them.
    Prune {
        /// The evidence root.
        root: PathBuf,
        /// Finished games to keep.
        #[arg(long)]
        keep: usize,
    },
}

pub fn run(args: Args) -> anyhow::Result<()> {
    match args.command {
        Command::Verify {
            dir,
            pubkey,
            head,
            verbose,
        } => verify(&dir, pubkey.as_deref(), head.as_deref(), verbose),
        Command::Export { game_dir, out } => {
            let s = evidence::export(&game_dir, &out)
                .with_context(|| format!("export {}", game_dir.display()))?;
            println!(
                "exported {} records, {} frames to {}{}",
                s.records,
                s.frames,
                s.out.display(),
                if s.problems > 0 {
                    format!(
                        " (verify found {} problem(s); exported as found)",
                        s.problems
                    )
                } else {
                    String::new()
                }
            );
            Ok(())
        }
        Command::Show { dir, sheets } => show(&dir, sheets.as_deref()),
        Command::Keygen { file } => {
            let key = evidence::generate_signing_key(&file)?;
            println!("{}", hex::encode(key.verifying_key().to_bytes()));
            Ok(())
        }
        Command::Prune { root, keep } => {
            for d in evidence::prune(&root, keep)? {
                println!("removed {}", d.display());
            }
            Ok(())
        }
    }
}

fn parse_pubkey(arg: &str) -> anyhow::Result<VerifyingKey> {
    let text = if Path::new(arg).is_file() {
        std::fs::read_to_string(arg).with_context(|| format!("read {arg}"))?
    } else {
        arg.to_string()
    };
    let bytes = hex::decode(text.trim()).context("public key is not hex")?;
    let bytes: [u8; 32] = bytes
        .try_into()
        .map_err(|b: Vec<u8>| anyhow::anyhow!("public key has {} bytes, expected 32", b.len()))?;
    VerifyingKey::from_bytes(&bytes).context("not an Ed25519 public key")
}

fn verify(
    dir: &Path,
    pubkey: Option<&str>,
    head: Option<&str>,
    verbose: bool,
) -> anyhow::Result<()> {
    let opts = VerifyOptions {
        expected_key: pubkey.map(parse_pubkey).transpose()?,
        expected_head: head
            .map(|h| {
                h.parse::<ChainHead>()
                    .map_err(|e| anyhow::anyhow!("--head: {e}"))
            })
            .transpose()?,
    };
    if dir.is_file() {
        // An exported archive: unpack into a private temp dir, verify, clean up.
        let tmp = std::env::temp_dir().join(format!(
            "tandem-evidence-verify-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        let result = (|| {
            let file =
                std::fs::File::open(dir).with_context(|| format!("open {}", dir.display()))?;
            let mut archive = zip::ZipArchive::new(file)
                .with_context(|| format!("{}: not a zip archive", dir.display()))?;
            archive
                .extract(&tmp)
                .with_context(|| format!("unpack {}", dir.display()))?;
            verify_dirs(&tmp, &opts, verbose)
        })();
        let _ = std::fs::remove_dir_all(&tmp);
        return result;
    }
    verify_dirs(dir, &opts, verbose)
}

fn verify_dirs(dir: &Path, opts: &VerifyOptions, verbose: bool) -> anyhow::Result<()> {
    let games: Vec<PathBuf> = if dir.join(LOG_FILE).is_file() {
        vec![dir.to_path_buf()]
    } else {
        list_games(dir)?.into_iter().map(|g| g.dir).collect()
    };
    if games.is_empty() {
        bail!("{}: no evidence log found", dir.display());
    }
    let mut out = std::io::stdout().lock();
    let (mut bad, mut records, mut frames) = (0usize, 0usize, 0usize);
    let many = games.len() > 1;
    let mut reports: Vec<VerifyReport> = Vec::new();
    for g in &games {
        let r = evidence::verify_with(g, opts)?;
        records += r.records;
        frames += r.frames;
        let prefix = if many {
            format!("{}: ", g.display())
        } else {
            String::new()
        };
        if verbose {
            if let Some(h) = &r.head {
                writeln!(out, "{prefix}head: {h}")?;
            }
            for n in &r.notes {
                writeln!(out, "{prefix}note: {n}")?;
            }
        }
        if r.is_intact() {
            let tail = r
                .truncated_tail
                .as_ref()
                .map(|t| format!(" (truncated tail of {} bytes ignored)", t.bytes))
                .unwrap_or_default();
            let open = if r.finished { "" } else { " (unfinished)" };
            writeln!(
                out,
                "{prefix}ok: {} records, {} frames{open}{tail}",
                r.records, r.frames
            )?;
        } else {
            bad += 1;
            out.flush()?;
            for p in &r.problems {
                eprintln!("{prefix}{p}");
            }
        }
        reports.push(r);
    }
    if bad > 0 {
        let problems: usize = reports.iter().map(|r| r.problems.len()).sum();
        out.flush()?;
        // The one-line summary, last on stderr (main prints it with the `error:` prefix).
        bail!(
            "evidence NOT intact: {problems} problem(s) in {bad} of {} game(s) ({records} records, {frames} frames checked)",
            games.len()
        );
    }
    Ok(())
}

fn show(dir: &Path, sheets: Option<&Path>) -> anyhow::Result<()> {
    let entries = evidence::timeline(dir)?;
    let mut out = std::io::stdout().lock();
    for e in &entries {
        writeln!(out, "{e}")?;
    }
    if let Some(sheets) = sheets {
        for p in evidence::contact_sheets(dir, sheets)? {
            writeln!(out, "contact sheet: {}", p.display())?;
        }
    }
    Ok(())
}
