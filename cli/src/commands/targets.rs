//! `weft targets`: what this machine can run.

use weft_runtime::target::TARGET_NAMES;
use weft_runtime::{SourceLanguage, Target, TargetInfo, available_targets};

use crate::error::CliError;
use crate::format::Table;
use crate::out::out;

/// Prints one line per target (and per further device): its status, the language it
/// emits, and its device or why it is unavailable.
pub fn targets() -> Result<(), CliError> {
    let infos = available_targets();
    let mut table = Table::new(&["target", "status", "emits", "device / reason"]);
    for name in TARGET_NAMES {
        let these: Vec<&TargetInfo> = infos.iter().filter(|i| i.target.name() == name).collect();
        if these.is_empty() {
            // Every target kind gets a line, even one the runtime did not report.
            let emits = Target::parse(name).map(|t| emits(&t)).unwrap_or("-");
            table.row(vec![
                name.to_string(),
                "unavailable".to_string(),
                emits.to_string(),
                "not probed".to_string(),
            ]);
        }
        for info in these {
            let status = if info.is_available() {
                "available"
            } else if info.is_compile_only() {
                "compile-only"
            } else {
                "unavailable"
            };
            let detail = match (&info.device, &info.unavailable) {
                (Some(d), Some(why)) => format!("{d}; {why}"),
                (Some(d), None) => d.clone(),
                (None, Some(why)) => why.clone(),
                (None, None) => String::new(),
            };
            table.row(vec![
                info.target.to_string(),
                status.to_string(),
                emits(&info.target).to_string(),
                detail,
            ]);
        }
    }
    out!("{}", table.render())?;
    Ok(())
}

/// What `weft emit` prints for a target.
fn emits(target: &Target) -> &'static str {
    match target.emit_language() {
        None => "IR",
        Some(SourceLanguage::Cuda) => "CUDA C",
        Some(SourceLanguage::Wgsl) => "WGSL",
        Some(SourceLanguage::Msl) => "MSL",
        Some(SourceLanguage::Hip) => "HIP",
    }
}
