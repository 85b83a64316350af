//! Tokens of BPGN text, each with its line and column, and resynchronisation after an error.

use super::{BoardId, BpgnErrorKind, Color, GameResult, san::is_san_shaped};

/// One lexical unit of BPGN.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Token<'a> {
    Tag {
        name: String,
        value: String,
    },
    /// `{...}` text, verbatim.
    Comment(String),
    /// `;...` text up to the line end, verbatim.
    LineComment(String),
    MoveIndicator {
        number: u32,
        board: BoardId,
        color: Color,
        /// The indicator as written, for error messages.
        text: &'a str,
    },
    /// A SAN-shaped move with its `!`/`?` suffix split off as a glyph.
    San {
        san: String,
        nag: Option<u8>,
    },
    Nag(u8),
    Result(GameResult),
}

/// A token and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spanned<'a> {
    pub token: Token<'a>,
    pub line: usize,
    pub column: usize,
    /// Whether an empty line lies between the previous token and this one (games are
    /// separated by blank lines).
    pub after_blank_line: bool,
}

/// A lexing error and where it happened (before the game index is known).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LexError {
    pub line: usize,
    pub column: usize,
    pub kind: BpgnErrorKind,
}

/// Characters that may continue a SAN or result token.
fn is_symbol_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '@' | '=' | '+' | '#' | '-' | '/' | ':' | '!' | '?')
}

/// The glyph for a `!`/`?` suffix (PGN standard numbering), `None` for anything else.
fn suffix_nag(suffix: &str) -> Option<u8> {
    Some(match suffix {
        "!" => 1,
        "?" => 2,
        "!!" => 3,
        "??" => 4,
        "!?" => 5,
        "?!" => 6,
        _ => return None,
    })
}

/// Walks decoded BPGN text token by token.
pub(crate) struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    line: usize,
    column: usize,
}

impl<'a> Lexer<'a> {
    pub fn new(src: &'a str) -> Self {
        Lexer {
            src,
            pos: 0,
            line: 1,
            column: 1,
        }
    }

    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn peek_second(&self) -> Option<char> {
        self.src[self.pos..].chars().nth(1)
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line += 1;
            self.column = 1;
        } else {
            self.column += 1;
        }
        Some(c)
    }

    fn error(&self, line: usize, column: usize, kind: BpgnErrorKind) -> LexError {
        LexError { line, column, kind }
    }

    /// Consumes the characters while `keep` holds and returns them.
    fn take_while(&mut self, keep: impl Fn(char) -> bool) -> &'a str {
        let start = self.pos;
        while self.peek().is_some_and(&keep) {
            self.bump();
        }
        &self.src[start..self.pos]
    }

    /// Skips whitespace and `%` escape lines; reports whether an empty line was crossed.
    fn skip_space(&mut self) -> bool {
        let mut newlines_in_gap = 0;
        let mut blank = false;
        loop {
            match self.peek() {
                Some('\n') => {
                    newlines_in_gap += 1;
                    if newlines_in_gap >= 2 {
                        blank = true;
                    }
                    self.bump();
                }
                Some(c) if c.is_whitespace() => {
                    self.bump();
                }
                Some('%') if self.column == 1 => {
                    // An escape line is not blank: the gap starts again after it.
                    self.take_while(|c| c != '\n');
                    newlines_in_gap = 0;
                }
                _ => return blank,
            }
        }
    }

    /// The next token, `Ok(None)` at the end of the input.
    pub fn next_token(&mut self) -> Result<Option<Spanned<'a>>, LexError> {
        let after_blank_line = self.skip_space();
        let (line, column) = (self.line, self.column);
        let Some(c) = self.peek() else {
            return Ok(None);
        };
        let token = match c {
            '[' => self.tag(line, column)?,
            '{' => {
                self.bump();
                let start = self.pos;
                let Some(len) = self.src[start..].find('}') else {
                    return Err(self.error(line, column, BpgnErrorKind::UnterminatedComment));
                };
                while self.pos < start + len {
                    self.bump();
                }
                self.bump();
                Token::Comment(self.src[start..start + len].to_string())
            }
            ';' => {
                self.bump();
                Token::LineComment(self.take_while(|c| c != '\n').to_string())
            }
            '$' => {
                self.bump();
                let digits = self.take_while(|c| c.is_ascii_digit());
                match digits.parse::<u8>() {
                    Ok(n) => Token::Nag(n),
                    Err(_) => {
                        return Err(self.error(
                            line,
                            column,
                            BpgnErrorKind::BadNag(format!("${digits}")),
                        ));
                    }
                }
            }
            '*' => {
                self.bump();
                Token::Result(GameResult::Unknown)
            }
            '(' | ')' => return Err(self.error(line, column, BpgnErrorKind::Variation)),
            '!' | '?' => {
                let text = self.take_while(|c| c == '!' || c == '?');
                match suffix_nag(text) {
                    Some(n) => Token::Nag(n),
                    None => {
                        return Err(self.error(
                            line,
                            column,
                            BpgnErrorKind::BadNag(text.to_string()),
                        ));
                    }
                }
            }
            c if c.is_ascii_digit() => self.number_or_result(line, column)?,
            c if is_symbol_char(c) => {
                let text = self.take_while(is_symbol_char);
                self.san(text, line, column)?
            }
            other => return Err(self.error(line, column, BpgnErrorKind::UnexpectedChar(other))),
        };
        Ok(Some(Spanned {
            token,
            line,
            column,
            after_blank_line,
        }))
    }

    fn san(&self, text: &str, line: usize, column: usize) -> Result<Token<'a>, LexError> {
        let body = text.trim_end_matches(['!', '?']);
        let nag = match &text[body.len()..] {
            "" => None,
            suffix => Some(
                suffix_nag(suffix)
                    .ok_or_else(|| self.error(line, column, BpgnErrorKind::BadSan(text.into())))?,
            ),
        };
        if !is_san_shaped(body) {
            return Err(self.error(line, column, BpgnErrorKind::BadSan(text.into())));
        }
        Ok(Token::San {
            san: body.to_string(),
            nag,
        })
    }

    /// A token starting with a digit: a move indicator `12A.`, a result, or `0-0` castling.
    fn number_or_result(&mut self, line: usize, column: usize) -> Result<Token<'a>, LexError> {
        let start = self.pos;
        let digits = self.take_while(|c| c.is_ascii_digit());
        let board_letter = self.peek();
        if matches!(board_letter, Some('A' | 'a' | 'B' | 'b')) && self.peek_second() == Some('.') {
            self.bump();
            self.take_while(|c| c == '.');
            let text = &self.src[start..self.pos];
            let number = digits.parse::<u32>().map_err(|_| {
                self.error(line, column, BpgnErrorKind::BadMoveNumber(text.to_string()))
            })?;
            let (board, color) = match board_letter {
                Some('A') => (BoardId::A, Color::White),
                Some('a') => (BoardId::A, Color::Black),
                Some('B') => (BoardId::B, Color::White),
                _ => (BoardId::B, Color::Black),
            };
            return Ok(Token::MoveIndicator {
                number,
                board,
                color,
                text,
            });
        }
        let rest = self.take_while(|c| is_symbol_char(c) || c == '.');
        let text = format!("{digits}{rest}");
        if let Ok(result) = text.parse::<GameResult>() {
            return Ok(Token::Result(result));
        }
        if text.starts_with("0-0") {
            return self.san(&text, line, column);
        }
        Err(self.error(line, column, BpgnErrorKind::BadMoveNumber(text)))
    }

    /// `[Name "value"]` on one line; `\"` and `\\` are escapes, other backslashes are literal.
    fn tag(&mut self, line: usize, column: usize) -> Result<Token<'a>, LexError> {
        self.bump();
        self.take_while(|c| c == ' ' || c == '\t');
        let name = self
            .take_while(|c| c.is_ascii_alphanumeric() || c == '_')
            .to_string();
        if name.is_empty() {
            return Err(self.error(self.line, self.column, BpgnErrorKind::MissingTagName));
        }
        self.take_while(|c| c == ' ' || c == '\t');
        if self.peek() != Some('"') {
            return Err(self.error(self.line, self.column, BpgnErrorKind::MissingTagValue(name)));
        }
        self.bump();
        let mut value = String::new();
        loop {
            match self.peek() {
                None | Some('\n') => {
                    return Err(self.error(line, column, BpgnErrorKind::UnterminatedTag));
                }
                Some('"') => {
                    self.bump();
                    break;
                }
                Some('\\') if matches!(self.peek_second(), Some('"' | '\\')) => {
                    self.bump();
                    value.extend(self.bump());
                }
                Some(c) => {
                    self.bump();
                    value.push(c);
                }
            }
        }
        self.take_while(|c| c == ' ' || c == '\t');
        if self.peek() != Some(']') {
            return Err(self.error(line, column, BpgnErrorKind::UnterminatedTag));
        }
        self.bump();
        Ok(Token::Tag { name, value })
    }

    /// After an error: moves to the start of the next game, i.e. the next line that begins with
    /// `[` (after optional blanks) and is not preceded by another such line, looking only at lines
    /// after the one holding `line`. Leaves the lexer at the end of the input if there is none.
    pub fn resync_after(&mut self, line: usize) {
        while self.line < line && self.peek().is_some() {
            self.bump();
        }
        let starts_tag = |l: &str| l.trim_start().starts_with('[');
        let line_start = self.src[..self.pos].rfind('\n').map_or(0, |i| i + 1);
        let error_line = self.src[line_start..].split('\n').next().unwrap_or("");
        // A tag line's followers of the same tag block belong to the broken game.
        let mut previous_was_tag = starts_tag(error_line);
        self.take_while(|c| c != '\n');
        self.bump();
        while self.peek().is_some() {
            let rest = &self.src[self.pos..];
            let this_line = rest.split('\n').next().unwrap_or("");
            let is_tag = starts_tag(this_line);
            if is_tag && !previous_was_tag {
                return;
            }
            previous_was_tag = is_tag;
            self.take_while(|c| c != '\n');
            self.bump();
        }
    }

    /// The current line.
    #[cfg(test)]
    pub fn line(&self) -> usize {
        self.line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(src: &str) -> Vec<Token<'_>> {
        let mut lx = Lexer::new(src);
        let mut out = Vec::new();
        while let Some(t) = lx.next_token().expect("test input lexes") {
            out.push(t.token);
        }
        out
    }

    fn lex_error(src: &str) -> LexError {
        let mut lx = Lexer::new(src);
        loop {
            match lx.next_token() {
                Ok(Some(_)) => {}
                Ok(None) => panic!("{src:?} lexed without error"),
                Err(e) => return e,
            }
        }
    }

    #[test]
    fn two_tags_on_a_line_with_escapes() {
        assert_eq!(
            tokens(r#"[WhiteA "x"][WhiteAElo "1460"] [Event "say \"hi\" \\ \o/"]"#),
            vec![
                Token::Tag {
                    name: "WhiteA".into(),
                    value: "x".into()
                },
                Token::Tag {
                    name: "WhiteAElo".into(),
                    value: "1460".into()
                },
                Token::Tag {
                    name: "Event".into(),
                    value: r#"say "hi" \ \o/"#.into()
                },
            ]
        );
    }

    #[test]
    fn movetext_tokens() {
        let t = tokens("1A. e4{179.547} 1a.Nc6!? $14 ; rest\n12b... 0-0 {x} 1/2-1/2 *");
        assert_eq!(
            t,
            vec![
                Token::MoveIndicator {
                    number: 1,
                    board: BoardId::A,
                    color: Color::White,
                    text: "1A."
                },
                Token::San {
                    san: "e4".into(),
                    nag: None
                },
                Token::Comment("179.547".into()),
                Token::MoveIndicator {
                    number: 1,
                    board: BoardId::A,
                    color: Color::Black,
                    text: "1a."
                },
                Token::San {
                    san: "Nc6".into(),
                    nag: Some(5)
                },
                Token::Nag(14),
                Token::LineComment(" rest".into()),
                Token::MoveIndicator {
                    number: 12,
                    board: BoardId::B,
                    color: Color::Black,
                    text: "12b..."
                },
                Token::San {
                    san: "0-0".into(),
                    nag: None
                },
                Token::Comment("x".into()),
                Token::Result(GameResult::Draw),
                Token::Result(GameResult::Unknown),
            ]
        );
    }

    #[test]
    fn blank_lines_and_escape_lines_are_seen() {
        let mut lx = Lexer::new("[A \"1\"]\n% escaped line\n[B \"2\"]\n\n  \n[C \"3\"]");
        let flags: Vec<bool> = std::iter::from_fn(|| lx.next_token().expect("lexes"))
            .map(|s| s.after_blank_line)
            .collect();
        assert_eq!(flags, vec![false, false, true]);
    }

    #[test]
    fn errors_carry_position() {
        let e = lex_error("1A. e4\n  1a. e9");
        assert_eq!((e.line, e.column), (2, 7));
        assert_eq!(e.kind, BpgnErrorKind::BadSan("e9".into()));
        let e = lex_error("1A. e4 {never closed\n");
        assert_eq!(
            (e.line, e.column, e.kind),
            (1, 8, BpgnErrorKind::UnterminatedComment)
        );
        let e = lex_error("[Event \"x\"\n");
        assert_eq!(e.kind, BpgnErrorKind::UnterminatedTag);
        assert_eq!(lex_error("[ \"x\"]").kind, BpgnErrorKind::MissingTagName);
        assert_eq!(
            lex_error("1. e4").kind,
            BpgnErrorKind::BadMoveNumber("1.".into())
        );
        assert_eq!(lex_error("1A. e4 (1A. d4)").kind, BpgnErrorKind::Variation);
        assert_eq!(lex_error("$999").kind, BpgnErrorKind::BadNag("$999".into()));
        assert_eq!(
            lex_error("1A. e4 ~").kind,
            BpgnErrorKind::UnexpectedChar('~')
        );
    }

    #[test]
    fn resync_finds_the_next_tag_block() {
        let src = "[A \"1\"]\n[B \"2\"]\n[C \"3\"]\n1A. e4\n\n[D \"4\"]\n";
        let mut lx = Lexer::new(src);
        lx.resync_after(1);
        assert_eq!(lx.line(), 6);
        let mut lx = Lexer::new(src);
        lx.resync_after(6);
        assert_eq!(lx.next_token().expect("end is fine"), None);
    }
}
