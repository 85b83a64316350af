//! `tandem demo`: the README's main command.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use tandem_monitor::runtime;
use tandem_monitor::vision::model::OnnxModel;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directory holding the committed fixtures (defaults to the checkout's `fixtures/`).
    #[arg(long)]
    fixtures: Option<PathBuf>,
}

fn fixtures_dir(arg: Option<PathBuf>) -> PathBuf {
    arg.unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures"))
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let fixtures = fixtures_dir(args.fixtures);
    let mut out = std::io::stdout().lock();
    let lib = runtime::onnx_environment()
        .map(|_| runtime::find_onnxruntime())
        .context("vision runtime")??;
    writeln!(out, "vision: ONNX Runtime loaded from {}", lib.display())?;
    let model_path = fixtures.join("tiny-linear.onnx");
    let mut model = OnnxModel::load(&model_path, 1).context("vision runtime self-test")?;
    let y = model.run(&[1, 4], vec![1.0, 2.0, 3.0, 4.0])?;
    writeln!(
        out,
        "vision: self-test model {} -> {:?}",
        model.path().display(),
        y.data
    )?;
    Ok(())
}

pub fn doctor() -> anyhow::Result<()> {
    let lib = runtime::find_onnxruntime()?;
    runtime::onnx_environment()?;
    println!("onnxruntime: {}", lib.display());
    Ok(())
}
