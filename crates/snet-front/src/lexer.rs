//! The lexer: source text to tokens with byte spans.
//!
//! Maximal munch over a small fixed set of punctuators (`[|` `|]` `...` `..`
//! `->` `||` `**` `!!` `!@` `==` `!=` `<=` `>=` `&&` before their one-character
//! prefixes). Keywords are plain identifiers; the parser decides by context.
//! `<` and `>` are single tokens: whether they bracket a tag or compare is the
//! parser's business. Problems (stray characters, bad literals, unterminated
//! comments) become diagnostics and the lexer carries on.

use crate::diag::{Diagnostic, Diagnostics, Span};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Tok {
    Ident,
    Int(i64),
    LParen,
    RParen,
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    /// `[|`
    SyncOpen,
    /// `|]`
    SyncClose,
    Lt,
    Gt,
    Le,
    Ge,
    EqEq,
    Ne,
    Eq,
    Hash,
    Comma,
    Semi,
    Colon,
    Question,
    Arrow,
    DotDot,
    Ellipsis,
    Bar,
    BarBar,
    Star,
    StarStar,
    Bang,
    BangBang,
    BangAt,
    Backslash,
    At,
    AndAnd,
    Plus,
    Minus,
    Slash,
    Percent,
    Eof,
}

impl Tok {
    /// How the token reads in messages.
    pub fn describe(self) -> &'static str {
        match self {
            Tok::Ident => "a name",
            Tok::Int(_) => "an integer",
            Tok::LParen => "`(`",
            Tok::RParen => "`)`",
            Tok::LBrace => "`{`",
            Tok::RBrace => "`}`",
            Tok::LBracket => "`[`",
            Tok::RBracket => "`]`",
            Tok::SyncOpen => "`[|`",
            Tok::SyncClose => "`|]`",
            Tok::Lt => "`<`",
            Tok::Gt => "`>`",
            Tok::Le => "`<=`",
            Tok::Ge => "`>=`",
            Tok::EqEq => "`==`",
            Tok::Ne => "`!=`",
            Tok::Eq => "`=`",
            Tok::Hash => "`#`",
            Tok::Comma => "`,`",
            Tok::Semi => "`;`",
            Tok::Colon => "`:`",
            Tok::Question => "`?`",
            Tok::Arrow => "`->`",
            Tok::DotDot => "`..`",
            Tok::Ellipsis => "`...`",
            Tok::Bar => "`|`",
            Tok::BarBar => "`||`",
            Tok::Star => "`*`",
            Tok::StarStar => "`**`",
            Tok::Bang => "`!`",
            Tok::BangBang => "`!!`",
            Tok::BangAt => "`!@`",
            Tok::Backslash => "`\\`",
            Tok::At => "`@`",
            Tok::AndAnd => "`&&`",
            Tok::Plus => "`+`",
            Tok::Minus => "`-`",
            Tok::Slash => "`/`",
            Tok::Percent => "`%`",
            Tok::Eof => "end of file",
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Token {
    pub tok: Tok,
    pub start: u32,
    pub end: u32,
}

impl Token {
    pub fn span(&self) -> Span {
        self.start as usize..self.end as usize
    }
}

/// Skips whitespace and comments from `pos`; returns the new position.
/// An unterminated block comment is reported and runs to the end.
pub fn skip_trivia(src: &str, mut pos: usize, diags: &mut Diagnostics) -> usize {
    let b = src.as_bytes();
    loop {
        while pos < b.len() && b[pos].is_ascii_whitespace() {
            pos += 1;
        }
        if b[pos..].starts_with(b"//") {
            while pos < b.len() && b[pos] != b'\n' {
                pos += 1;
            }
        } else if b[pos..].starts_with(b"/*") {
            match src[pos + 2..].find("*/") {
                Some(i) => pos = pos + 2 + i + 2,
                None => {
                    diags.push(
                        Diagnostic::error(pos..pos + 2, "unterminated block comment")
                            .with_label("this comment is never closed with `*/`"),
                    );
                    pos = b.len();
                }
            }
        } else {
            return pos;
        }
    }
}

/// Lexes `src[start..]`; the result always ends with an [`Tok::Eof`] token.
pub fn lex(src: &str, start: usize, diags: &mut Diagnostics) -> Vec<Token> {
    let b = src.as_bytes();
    let mut toks = Vec::with_capacity(src.len() / 3);
    let mut pos = start;
    loop {
        pos = skip_trivia(src, pos, diags);
        if pos >= b.len() {
            toks.push(Token {
                tok: Tok::Eof,
                start: b.len() as u32,
                end: b.len() as u32,
            });
            return toks;
        }
        let at = pos;
        let c = b[pos];
        let two = |s: &[u8]| b[pos..].starts_with(s);
        let (tok, len) = if c.is_ascii_alphabetic() || c == b'_' {
            let mut e = pos + 1;
            while e < b.len() && (b[e].is_ascii_alphanumeric() || b[e] == b'_') {
                e += 1;
            }
            (Tok::Ident, e - pos)
        } else if c.is_ascii_digit() {
            let mut e = pos + 1;
            while e < b.len() && (b[e].is_ascii_alphanumeric() || b[e] == b'_') {
                e += 1;
            }
            let text = &src[pos..e];
            let value = parse_int(text).unwrap_or_else(|msg| {
                diags.push(
                    Diagnostic::error(pos..e, format!("invalid integer literal `{text}`"))
                        .with_label(msg),
                );
                0
            });
            (Tok::Int(value), e - pos)
        } else if two(b"...") {
            (Tok::Ellipsis, 3)
        } else if two(b"[|") {
            (Tok::SyncOpen, 2)
        } else if two(b"|]") {
            (Tok::SyncClose, 2)
        } else if two(b"..") {
            (Tok::DotDot, 2)
        } else if two(b"->") {
            (Tok::Arrow, 2)
        } else if two(b"||") {
            (Tok::BarBar, 2)
        } else if two(b"**") {
            (Tok::StarStar, 2)
        } else if two(b"!!") {
            (Tok::BangBang, 2)
        } else if two(b"!@") {
            (Tok::BangAt, 2)
        } else if two(b"!=") {
            (Tok::Ne, 2)
        } else if two(b"==") {
            (Tok::EqEq, 2)
        } else if two(b"<=") {
            (Tok::Le, 2)
        } else if two(b">=") {
            (Tok::Ge, 2)
        } else if two(b"&&") {
            (Tok::AndAnd, 2)
        } else {
            let t = match c {
                b'(' => Tok::LParen,
                b')' => Tok::RParen,
                b'{' => Tok::LBrace,
                b'}' => Tok::RBrace,
                b'[' => Tok::LBracket,
                b']' => Tok::RBracket,
                b'<' => Tok::Lt,
                b'>' => Tok::Gt,
                b'=' => Tok::Eq,
                b'#' => Tok::Hash,
                b',' => Tok::Comma,
                b';' => Tok::Semi,
                b':' => Tok::Colon,
                b'?' => Tok::Question,
                b'|' => Tok::Bar,
                b'*' => Tok::Star,
                b'!' => Tok::Bang,
                b'\\' => Tok::Backslash,
                b'@' => Tok::At,
                b'+' => Tok::Plus,
                b'-' => Tok::Minus,
                b'/' => Tok::Slash,
                b'%' => Tok::Percent,
                _ => {
                    let ch = src[pos..].chars().next().unwrap_or('\u{fffd}');
                    let len = ch.len_utf8().max(1);
                    diags.push(
                        Diagnostic::error(
                            pos..pos + len,
                            format!("unexpected character `{}`", ch.escape_debug()),
                        )
                        .with_label("not part of S-Net's syntax"),
                    );
                    pos += len;
                    continue;
                }
            };
            (t, 1)
        };
        pos += len;
        toks.push(Token {
            tok,
            start: at as u32,
            end: pos as u32,
        });
    }
}

/// Decimal, `0x` hexadecimal or leading-`0` octal.
fn parse_int(text: &str) -> Result<i64, &'static str> {
    let (digits, radix) =
        if let Some(h) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
            (h, 16)
        } else if text.len() > 1 && text.starts_with('0') {
            (&text[1..], 8)
        } else {
            (text, 10)
        };
    if digits.is_empty() {
        return Err("no digits after the prefix");
    }
    match i64::from_str_radix(digits, radix) {
        Ok(v) => Ok(v),
        Err(e) => Err(match e.kind() {
            std::num::IntErrorKind::PosOverflow => "does not fit in 64 bits",
            _ if radix == 8 => "a literal starting with 0 is octal: digits 0-7 only",
            _ => "not a number",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Tok> {
        let mut d = Diagnostics::default();
        lex(src, 0, &mut d).into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn punctuators_munch_maximally() {
        use Tok::*;
        assert_eq!(
            kinds("[| {a} |] .. ... -> || ** !! !@ <= >= != == && [] */"),
            vec![
                SyncOpen, LBrace, Ident, RBrace, SyncClose, DotDot, Ellipsis, Arrow, BarBar,
                StarStar, BangBang, BangAt, Le, Ge, Ne, EqEq, AndAnd, LBracket, RBracket, Star,
                Slash, Eof
            ]
        );
    }

    #[test]
    fn literals_and_comments() {
        assert_eq!(
            kinds("0x1F 017 42 0 // x\n /* y */ a"),
            vec![
                Tok::Int(31),
                Tok::Int(15),
                Tok::Int(42),
                Tok::Int(0),
                Tok::Ident,
                Tok::Eof
            ]
        );
        let mut d = Diagnostics::default();
        lex("09 99999999999999999999 0x /* open", 0, &mut d);
        assert_eq!(d.into_sorted().len(), 4);
    }

    #[test]
    fn stray_characters_are_reported_and_skipped() {
        let mut d = Diagnostics::default();
        let t = lex("a $ é b", 0, &mut d);
        assert_eq!(t.len(), 3);
        assert_eq!(d.into_sorted().len(), 2);
    }
}
