//! Repeating a user's input in an error message, safely.
//!
//! Errors name what was wrong (``unknown op `matmull` ``), but the input can be anything a
//! shell passes: 10,000 characters, or terminal escapes that recolour or clear the screen
//! of whoever reads the message. Every error that repeats user input (op and schedule
//! names, shapes, configs, target strings) does it through [`echo`].

/// Inputs longer than this many characters are shortened.
pub const ECHO_MAX_CHARS: usize = 80;

/// Characters kept from the start and from the end of a shortened input.
const HEAD: usize = 60;
const TAIL: usize = 12;

/// `input` in backticks, as an error message repeats it: control characters and other
/// invisible ones escaped as Rust writes them (`\u{1b}[31m`, `\n`), and past
/// [`ECHO_MAX_CHARS`] characters shortened to its start and end around an ellipsis, with
/// how many characters were cut after the closing backtick:
///
/// ```
/// use weft_ir::echo;
/// assert_eq!(echo("matmull"), "`matmull`");
/// assert_eq!(echo("\x1b[31mred"), "`\\u{1b}[31mred`");
/// let long = echo(&"a".repeat(10_000));
/// assert!(long.starts_with("`aaa") && long.ends_with("…aaaaaaaaaaaa` (9928 characters cut)"));
/// ```
pub fn echo(input: &str) -> String {
    let count = input.chars().count();
    if count <= ECHO_MAX_CHARS {
        return format!("`{}`", escaped(input));
    }
    let head: String = input.chars().take(HEAD).collect();
    let tail: String = input.chars().skip(count - TAIL).collect();
    format!(
        "`{}…{}` ({} characters cut)",
        escaped(&head),
        escaped(&tail),
        count - HEAD - TAIL
    )
}

/// `text` with every character that does not print as itself escaped (controls, escape
/// sequences' ESC, bidirectional overrides, zero-width ones); quotes and backslashes are
/// kept, since they print as themselves.
fn escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let printable = matches!(c, '\'' | '"' | '\\') || c.escape_debug().len() == 1;
        if printable {
            out.push(c);
        } else {
            out.extend(c.escape_debug());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_printable_input_is_kept() {
        assert_eq!(echo("m=1,n=2"), "`m=1,n=2`");
        assert_eq!(echo("cuda -arch=\"sm_80\" \\"), "`cuda -arch=\"sm_80\" \\`");
        assert_eq!(echo("größe"), "`größe`");
        assert_eq!(echo(&"x".repeat(ECHO_MAX_CHARS)).len(), ECHO_MAX_CHARS + 2);
    }

    #[test]
    fn controls_and_escapes_are_escaped() {
        assert_eq!(echo("\x1b[2J\x07"), "`\\u{1b}[2J\\u{7}`");
        assert_eq!(echo("a\nb\tc\r"), "`a\\nb\\tc\\r`");
        // A right-to-left override would reverse the rest of the line on a terminal.
        assert_eq!(echo("op\u{202e}x"), "`op\\u{202e}x`");
        assert!(!echo("\x1b[31m").contains('\x1b'));
    }

    #[test]
    fn long_input_is_cut_with_a_count() {
        let input = format!("{}{}", "a".repeat(5000), "z".repeat(5000));
        let e = echo(&input);
        let want = format!(
            "`{}…{}` (9928 characters cut)",
            "a".repeat(60),
            "z".repeat(12)
        );
        assert_eq!(e, want);
        // Cut by characters, not bytes: a multi-byte character is never split.
        let e = echo(&"é".repeat(100));
        assert!(e.ends_with("` (28 characters cut)"), "{e}");
        // Escapes in a long input are escaped after cutting, so cannot be split either.
        let e = echo(&"\x1b".repeat(100));
        assert!(!e.contains('\x1b') && e.contains("\\u{1b}…\\u{1b}"), "{e}");
    }
}
