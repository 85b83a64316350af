//! From file bytes to text: UTF-8 when the bytes are valid UTF-8, else Latin-1; LF line ends.

use std::borrow::Cow;

/// Decodes `bytes` (valid UTF-8 as UTF-8, anything else byte-for-byte as Latin-1), drops a
/// leading byte-order mark and turns CRLF and lone CR into LF, so that the lexer sees one kind
/// of line end and line/column numbers match what an editor shows.
pub(crate) fn decode(bytes: &[u8]) -> Cow<'_, str> {
    let text: Cow<'_, str> = match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s.strip_prefix('\u{feff}').unwrap_or(s)),
        Err(_) => Cow::Owned(bytes.iter().map(|&b| char::from(b)).collect()),
    };
    if !text.contains('\r') {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' {
            if chars.peek() == Some(&'\n') {
                chars.next();
            }
            out.push('\n');
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_stays_utf8() {
        assert_eq!(decode("Grüße".as_bytes()), "Grüße");
        assert_eq!(decode("\u{feff}[A \"b\"]".as_bytes()), "[A \"b\"]");
    }

    #[test]
    fn invalid_utf8_is_latin1() {
        assert_eq!(decode(b"Gr\xfc\xdfe \x80\xfe"), "Grüße \u{80}þ");
    }

    #[test]
    fn line_ends_become_lf() {
        assert_eq!(decode(b"a\r\nb\rc\n\r\n"), "a\nb\nc\n\n");
        assert_eq!(decode(b"x\xe9\r\ny"), "xé\ny");
    }
}
