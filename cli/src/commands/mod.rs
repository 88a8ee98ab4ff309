//! One module per subcommand; each prints its result to stdout and returns the error
//! that sets the exit status.

pub(crate) mod bench;
pub(crate) mod compile;
mod emit;
mod generate_steps;
mod ir;
mod model;
mod model_check;
mod model_generate;
mod model_generate_onnx;
mod model_size;
mod model_symbolic;
mod model_tune;
mod ops;
mod report;
mod run;
pub(crate) mod sweep;
mod targets;
mod tune;

use crate::args::Command;
use crate::error::CliError;

/// Runs a parsed command.
pub fn dispatch(command: &Command) -> Result<(), CliError> {
    match command {
        Command::Targets => targets::targets(),
        Command::Ops => ops::ops(),
        Command::Ir(a) => ir::ir(a),
        Command::Emit(a) => emit::emit(a),
        Command::Compile(a) => compile::compile(a),
        Command::Run(a) => run::run(a),
        Command::Bench(a) => bench::bench(a),
        Command::Tune(a) => tune::tune(a),
        Command::Sweep(a) => sweep::sweep(a),
        Command::Report(a) => report::report(a),
        Command::Model(a) => model::model(&a.command),
    }
}
