//! Text shown to people and models: cut to a bound on character boundaries, and made visible.
//!
//! Two jobs, one module, because every place that shows model-controlled text needs both:
//!
//! - [`shorten`] cuts a text past a byte bound, keeping its head (or its head and tail), and says
//!   how much was cut and the true size. It is the one text-cutting helper of the crate.
//! - [`visible`] makes every character that a terminal would *interpret* instead of show —
//!   control characters, escape sequences, bidirectional overrides, invisible separators — into
//!   a visible escape. A model controls command lines, paths, reasons and ids; printed raw,
//!   `\x1b[2K\r` or a right-to-left override could rewrite what the person approving a call
//!   sees before answering.
//!
//! This module is a leaf: it imports nothing from the crate.

use std::borrow::Cow;
use std::fmt::Write;

/// What [`shorten`] keeps of a text past its bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// The first bytes (a message, a line).
    Head,
    /// The first and the last bytes, half each (a command's output, where the error is often
    /// at the end).
    HeadAndTail,
}

/// Cuts `text` to about `max` bytes on character boundaries, keeping what `keep` says, with a
/// marker that says how many bytes were cut and the true size. A text within the bound is
/// returned as it is.
pub fn shorten(text: &str, max: usize, keep: Keep) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let total = text.len();
    match keep {
        Keep::Head => {
            let head = text.floor_char_boundary(max);
            Cow::Owned(format!(
                "{}… [{} of {total} bytes shown]",
                &text[..head],
                head
            ))
        }
        Keep::HeadAndTail => {
            let head = text.floor_char_boundary(max / 2);
            let tail = text.ceil_char_boundary(total - (max - max / 2)).max(head);
            Cow::Owned(format!(
                "{}\n[… {} bytes elided; {total} bytes in all …]\n{}",
                &text[..head],
                tail - head,
                &text[tail..]
            ))
        }
    }
}

/// Whether a character must be escaped before a terminal shows it: C0 and C1 controls, DEL,
/// the bidirectional embeddings, overrides, isolates and marks, the Unicode line and paragraph
/// separators, and zero-width characters that can hide text.
fn hidden(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}'
                | '\u{200B}'..='\u{200F}'
                | '\u{2028}'..='\u{202E}'
                | '\u{2060}'..='\u{2069}'
                | '\u{FEFF}'
                | '\u{FFF9}'..='\u{FFFB}'
        )
}

/// `text` with every character a terminal would interpret rather than show written as a
/// visible escape (`\n`, `\t`, `\x1b`, `\u{202e}`). Use it for one-line fields: a command,
/// a path, a reason, an id.
pub fn visible(text: &str) -> Cow<'_, str> {
    escape(text, false)
}

/// Like [`visible`], but line breaks and tabs stay as they are: for multi-line text such as a
/// model's answer streamed to the terminal.
pub fn visible_lines(text: &str) -> Cow<'_, str> {
    escape(text, true)
}

fn escape(text: &str, keep_lines: bool) -> Cow<'_, str> {
    let kept = |c: char| keep_lines && (c == '\n' || c == '\t');
    if !text.chars().any(|c| hidden(c) && !kept(c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !hidden(c) || kept(c) {
            out.push(c);
            continue;
        }
        let _ = match c {
            '\n' => out.write_str("\\n"),
            '\r' => out.write_str("\\r"),
            '\t' => out.write_str("\\t"),
            c if (c as u32) < 0x80 => write!(out, "\\x{:02x}", c as u32),
            c => write!(out, "\\u{{{:x}}}", c as u32),
        };
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_text_is_kept_whole() {
        assert!(matches!(
            shorten("short", 10, Keep::Head),
            Cow::Borrowed("short")
        ));
        assert_eq!(shorten("short", 5, Keep::HeadAndTail), "short");
    }

    #[test]
    fn the_head_is_cut_on_a_char_boundary_and_says_how_much() {
        let s = shorten("ééééé", 3, Keep::Head);
        assert_eq!(s, "é… [2 of 10 bytes shown]");
    }

    #[test]
    fn head_and_tail_keep_both_ends_and_the_true_size() {
        let long = format!("{}{}{}", "a".repeat(10), "b".repeat(100), "c".repeat(10));
        let s = shorten(&long, 20, Keep::HeadAndTail);
        assert!(
            s.starts_with("aaaaaaaaaa\n[… 100 bytes elided; 120 bytes in all …]\n"),
            "{s}"
        );
        assert!(s.ends_with("cccccccccc"), "{s}");
        let wide = "é".repeat(20);
        let s = shorten(&wide, 11, Keep::HeadAndTail);
        assert!(s.contains("bytes elided"), "{s}");
    }

    #[test]
    fn escape_sequences_and_controls_are_shown_not_interpreted() {
        assert_eq!(visible("rm -rf /\x1b[2K\rls"), "rm -rf /\\x1b[2K\\rls");
        assert_eq!(visible("a\nb\tc\x07\x7f"), "a\\nb\\tc\\x07\\x7f");
        assert_eq!(visible("\u{9b}31m"), "\\u{9b}31m");
    }

    #[test]
    fn bidi_overrides_and_invisible_characters_are_shown() {
        // "cat safe\u{202e}vne.\u{202c}" would display as "cat safe.env" reversed.
        assert_eq!(
            visible("cat x\u{202e}vne.\u{202c}"),
            "cat x\\u{202e}vne.\\u{202c}"
        );
        for c in [
            '\u{2066}', '\u{2069}', '\u{200b}', '\u{200e}', '\u{feff}', '\u{2028}', '\u{061c}',
        ] {
            let shown = visible(&format!("a{c}b")).into_owned();
            assert!(!shown.contains(c), "{c:?} stays hidden in {shown:?}");
        }
    }

    #[test]
    fn ordinary_text_is_untouched_and_borrowed() {
        for text in [
            "git status",
            "naïve café",
            "日本語のファイル.txt",
            "emoji 👍🏽",
            "a\\nb",
        ] {
            assert!(matches!(visible(text), Cow::Borrowed(_)), "{text}");
        }
    }

    #[test]
    fn multi_line_text_keeps_its_lines_but_not_its_escapes() {
        assert_eq!(
            visible_lines("one\n\ttwo\x1b]0;owned\x07"),
            "one\n\ttwo\\x1b]0;owned\\x07"
        );
    }
}
