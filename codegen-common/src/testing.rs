//! The rule every offline compile check follows: a missing tool (libnvrtc, a C++
//! compiler) skips the check with a printed reason, unless the environment variable
//! `WEFT_REQUIRE` (a comma list such as `nvrtc,msl,wgpu`) names it — then it fails. CI sets
//! `WEFT_REQUIRE` so that a check cannot silently stop running.

/// The outcome of a check that ran or was skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Checked {
    /// The tool ran and accepted the source.
    Passed,
    /// The tool is absent; the reason says which and how to get it.
    Skipped(String),
}

/// The environment variable that turns skips into failures.
pub const REQUIRE_VAR: &str = "WEFT_REQUIRE";

/// True if `WEFT_REQUIRE` names `tool` (case-insensitive) or `all`.
pub fn required(tool: &str) -> bool {
    std::env::var(REQUIRE_VAR)
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .any(|t| t.eq_ignore_ascii_case(tool) || t.eq_ignore_ascii_case("all"))
        })
        .unwrap_or(false)
}

/// Skips a check whose `tool` is absent: prints the reason and returns
/// [`Checked::Skipped`], or returns the reason as an error if `WEFT_REQUIRE` names `tool`.
pub fn skip(tool: &str, reason: String) -> Result<Checked, String> {
    if required(tool) {
        Err(format!("{REQUIRE_VAR} names `{tool}`, but: {reason}"))
    } else {
        eprintln!("skipped {tool} check: {reason}");
        Ok(Checked::Skipped(reason))
    }
}
