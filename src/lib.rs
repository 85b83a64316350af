//! tandem-monitor: watches over-the-board Tandem (bughouse) chess tables through a camera.
//!
//! The library follows the data flow of a table, one module per stage; a module only ever uses
//! modules to its left (see ARCHITECTURE.md):
//!
//! `engine` → `rules` → `vision` → `tracker` → `publish` / `evidence` / `broadcast`,
//! with `capture` and `sim` producing frames and `runtime` locating native libraries.

pub mod broadcast;
pub mod daemon;
pub mod engine;
pub mod evidence;
pub mod publish;
pub mod rules;
pub mod runtime;
pub mod sim;
pub mod tracker;
pub mod vision;
pub mod watch;
