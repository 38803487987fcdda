//! The lexer: source text to tokens with byte spans.
//!
//! Maximal munch over a small fixed set of punctuators (`[|` `|]` `...` `..`
//! `->` `||` `**` `!!@` `!!` `!@` `==` `!=` `<=` `>=` `&&` before their
//! shorter prefixes). Keywords are plain identifiers; the parser decides by
//! context. `<` and `>` are single tokens: whether they bracket a tag or
//! compare is the parser's business. Problems (stray characters, bad
//! literals, unterminated comments) become diagnostics and the lexer carries
//! on.
//!
//! Two constructs are foreign text that S-Net's tokens cannot describe, so
//! the lexer takes each as one token:
//! - **inline box code** `<<< LANGUAGE | code >>>` ([`Tok::Code`]): the code
//!   runs verbatim up to the first `>>>` (it may hold anything C has: `>>`,
//!   braces, strings, comments); [`code_parts`] splits the token.
//! - **a `<metadata>` block** ([`Tok::Metadata`], read by [`metadata::parse`]),
//!   recognised only where a definition may start: at the beginning of the
//!   file or after `;`, `{`, `}` or another block; and after a token that can
//!   end a `connect` expression (`net n {..} connect e` needs no `;`) if the
//!   text reads as a well-formed block there. Elsewhere `<metadata>` is the
//!   tag `<metadata>`, e.g. in `if <a <metadata> then`; so is `<metadata>`
//!   followed by `,` or `}` (a label in a record type, `{<metadata>}`) and
//!   `<metadata =` (an output item).

use crate::diag::{Diagnostic, Diagnostics, Span};
use crate::metadata::{self, Block};

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
    /// `!!@`
    BangBangAt,
    Backslash,
    At,
    AndAnd,
    Plus,
    Minus,
    Slash,
    Percent,
    /// A `<metadata>` block: the index of its [`Block`] in [`Lexed::metadata`].
    Metadata(u32),
    /// Inline box code `<<< LANGUAGE | code >>>` (see [`code_parts`]).
    Code,
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
            Tok::BangBangAt => "`!!@`",
            Tok::Backslash => "`\\`",
            Tok::At => "`@`",
            Tok::AndAnd => "`&&`",
            Tok::Plus => "`+`",
            Tok::Minus => "`-`",
            Tok::Slash => "`/`",
            Tok::Percent => "`%`",
            Tok::Metadata(_) => "a `<metadata>` block",
            Tok::Code => "inline box code `<<< ... >>>`",
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

/// What [`lex`] produces.
#[derive(Debug, Default)]
pub struct Lexed {
    /// Always ends with an [`Tok::Eof`] token.
    pub toks: Vec<Token>,
    /// The `<metadata>` blocks, in source order ([`Tok::Metadata`] indexes it).
    pub metadata: Vec<Block>,
}

/// The parts of an inline code token `<<< LANGUAGE | code >>>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeParts {
    /// The language name (empty if it is missing).
    pub language: Span,
    /// The code: everything after the `|` up to the closing `>>>`.
    pub code: Span,
    /// Whether the block is closed by `>>>` (otherwise it runs to the end).
    pub closed: bool,
    /// Offset where a language name and `|` were expected but not found.
    pub malformed_at: Option<usize>,
}

/// Splits the inline code block that starts with `<<<` at `start`.
pub fn code_parts(src: &str, start: usize) -> CodeParts {
    let b = src.as_bytes();
    let skip_ws = |mut p: usize| {
        while p < b.len() && b[p].is_ascii_whitespace() {
            p += 1;
        }
        p
    };
    let lang_start = skip_ws(start + 3);
    let mut lang_end = lang_start;
    while lang_end < b.len() && is_language_char(b[lang_end]) {
        lang_end += 1;
    }
    let bar = skip_ws(lang_end);
    let (code_start, malformed_at) = if lang_end > lang_start && b.get(bar) == Some(&b'|') {
        (bar + 1, None)
    } else if lang_end == lang_start {
        (lang_start, Some(lang_start))
    } else {
        (lang_end, Some(bar))
    };
    let (code_end, closed) = match src.get(code_start..).and_then(|r| r.find(">>>")) {
        Some(i) => (code_start + i, true),
        None => (b.len(), false),
    };
    CodeParts {
        language: lang_start..lang_end,
        code: code_start..code_end,
        closed,
        malformed_at,
    }
}

/// Characters of a box language name (`C`, `SAC`, `C++`, `Fortran90`, ...).
fn is_language_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'+' | b'-' | b'.')
}

/// Whether the `<metadata` at `pos` opens a metadata block rather than being
/// the tag `<metadata>` (see the module doc); `prev` is the previous token.
fn opens_metadata(src: &str, pos: usize, prev: Option<Tok>) -> bool {
    let Some(after) = src[pos..].strip_prefix("<metadata") else {
        return false;
    };
    if !after.starts_with(|c: char| c == '>' || c == '/' || c.is_ascii_whitespace()) {
        return false;
    }
    let rest = after.trim_start();
    if rest.starts_with('=') {
        return false; // `{<metadata = expr>}`
    }
    if let Some(r) = rest.strip_prefix('>') {
        if r.trim_start().starts_with([',', '}']) {
            return false; // `{<metadata>}`, `{<metadata>, a}`
        }
    }
    match prev {
        None | Some(Tok::Semi | Tok::LBrace | Tok::RBrace | Tok::Metadata(_)) => true,
        // The end of a `connect` expression: a block only if it reads as one.
        Some(Tok::Ident | Tok::RBracket | Tok::SyncClose | Tok::RParen | Tok::Gt | Tok::Int(_)) => {
            let mut scratch = Diagnostics::default();
            metadata::parse(src, pos, &mut scratch).is_some() && !scratch.has_errors()
        }
        Some(_) => false,
    }
}

/// Lexes `src[start..]`.
pub fn lex(src: &str, start: usize, diags: &mut Diagnostics) -> Lexed {
    let b = src.as_bytes();
    let mut toks: Vec<Token> = Vec::with_capacity(src.len() / 3);
    let mut blocks = Vec::new();
    let mut pos = start;
    loop {
        pos = skip_trivia(src, pos, diags);
        if pos >= b.len() {
            toks.push(Token {
                tok: Tok::Eof,
                start: b.len() as u32,
                end: b.len() as u32,
            });
            return Lexed {
                toks,
                metadata: blocks,
            };
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
        } else if two(b"<<<") {
            let parts = code_parts(src, pos);
            if let Some(m) = parts.malformed_at {
                diags.push(
                    Diagnostic::error(m..m, "expected a language name and `|` after `<<<`")
                        .with_label("expected e.g. `C |` here")
                        .with_secondary(pos..pos + 3, "inline box code starts here")
                        .with_note("inline box code is written `<<< LANGUAGE | code >>>`"),
                );
            }
            let end = if parts.closed {
                parts.code.end + 3
            } else {
                diags.push(
                    Diagnostic::error(pos..pos + 3, "unterminated inline box code")
                        .with_label("this code block is never closed with `>>>`"),
                );
                b.len()
            };
            (Tok::Code, end - pos)
        } else if c == b'<' && opens_metadata(src, pos, toks.last().map(|t| t.tok)) {
            let (block, end) = match metadata::parse(src, pos, diags) {
                Some(r) => r,
                None => (Block::default(), b.len()), // unreachable: `opens_metadata` checked the name
            };
            let end = end.max(pos + 1);
            blocks.push(block);
            (Tok::Metadata(blocks.len() as u32 - 1), end - pos)
        } else if two(b"...") {
            (Tok::Ellipsis, 3)
        } else if two(b"!!@") {
            (Tok::BangBangAt, 3)
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
                            format!(
                                "unexpected character `{}`",
                                snet_core::shown_text(ch.encode_utf8(&mut [0; 4]))
                            ),
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
        lex(src, 0, &mut d)
            .toks
            .into_iter()
            .map(|t| t.tok)
            .collect()
    }

    #[test]
    fn punctuators_munch_maximally() {
        use Tok::*;
        assert_eq!(
            kinds("[| {a} |] .. ... -> || ** !! !@ !!@ <= >= != == && [] */"),
            vec![
                SyncOpen, LBrace, Ident, RBrace, SyncClose, DotDot, Ellipsis, Arrow, BarBar,
                StarStar, BangBang, BangAt, BangBangAt, Le, Ge, Ne, EqEq, AndAnd, LBracket,
                RBracket, Star, Slash, Eof
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
    fn inline_code_is_one_verbatim_token() {
        let src = "box f((<a>) -> (<b>)) { <<< C |\n  x = a >> 1; /* } */ s = \"<<<\"; >>> };";
        let mut d = Diagnostics::default();
        let toks = lex(src, 0, &mut d).toks;
        assert!(!d.has_errors());
        let code = toks
            .iter()
            .find(|t| t.tok == Tok::Code)
            .expect("code token");
        assert!(src[code.span()].starts_with("<<< C |") && src[code.span()].ends_with(">>>"));
        let parts = code_parts(src, code.start as usize);
        assert_eq!(&src[parts.language], "C");
        assert_eq!(&src[parts.code], "\n  x = a >> 1; /* } */ s = \"<<<\"; ");
        assert!(parts.closed && parts.malformed_at.is_none());
        assert_eq!(
            kinds("{<<<SAC|x>>>}"),
            vec![Tok::LBrace, Tok::Code, Tok::RBrace, Tok::Eof]
        );
    }

    #[test]
    fn malformed_inline_code_is_reported() {
        for (src, errors) in [
            ("<<< | x >>>", 1),
            ("<<< C x >>>", 1),
            ("<<< C | x", 1),
            ("<<<", 2),
        ] {
            let mut d = Diagnostics::default();
            let toks = lex(src, 0, &mut d).toks;
            assert_eq!(d.into_sorted().len(), errors, "{src}");
            assert_eq!(toks[0].tok, Tok::Code, "{src}");
            assert_eq!(toks[1].tok, Tok::Eof, "{src}");
        }
    }

    #[test]
    fn metadata_blocks_only_where_a_definition_may_start() {
        let m = |src: &str| -> Vec<Tok> {
            let mut d = Diagnostics::default();
            let l = lex(src, 0, &mut d);
            l.toks.into_iter().map(|t| t.tok).collect()
        };
        use Tok::*;
        assert_eq!(m("<metadata/>"), vec![Metadata(0), Eof]);
        assert_eq!(
            m("x; <metadata> <a/> </metadata> { <metadata >x</metadata> }"),
            vec![Ident, Semi, Metadata(0), LBrace, Metadata(1), RBrace, Eof]
        );
        // The tag <metadata> in a record type, an output item and a split.
        assert_eq!(
            m("{<metadata>} {<metadata> , a} {<metadata = 1>} f ! <metadata>"),
            vec![
                LBrace,
                Lt,
                Ident,
                Gt,
                RBrace,
                LBrace,
                Lt,
                Ident,
                Gt,
                Comma,
                Ident,
                RBrace,
                LBrace,
                Lt,
                Ident,
                Eq,
                Int(1),
                Gt,
                RBrace,
                Ident,
                Bang,
                Lt,
                Ident,
                Gt,
                Eof
            ]
        );
        // `<metadatax>` is not a block.
        assert_eq!(m("<metadatax>"), vec![Lt, Ident, Gt, Eof]);
        // After the end of an expression: a block if it reads as one.
        assert_eq!(m("x <metadata/>"), vec![Ident, Metadata(0), Eof]);
        assert_eq!(
            m("if <a <metadata> then {} else {}"),
            vec![
                Ident, Lt, Ident, Lt, Ident, Gt, Ident, LBrace, RBrace, Ident, LBrace, RBrace, Eof
            ]
        );
    }

    #[test]
    fn stray_characters_are_reported_and_skipped() {
        let mut d = Diagnostics::default();
        let t = lex("a $ é b", 0, &mut d).toks;
        assert_eq!(t.len(), 3);
        assert_eq!(d.into_sorted().len(), 2);
    }
}
