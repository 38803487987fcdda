//! The input bound: `--input-limit "8 + 2*output"`.
//!
//! A formula in the variable `output` (records emitted so far) with integer
//! literals, `+ - *`, division by a positive literal (`output / 2`,
//! rounded down) and parentheses. Input record number `n` (counting from
//! one) is admitted only while `n <= limit(output)` — except when the whole
//! network is idle, where admitting is the only way to make progress (a
//! network may need more input before it can emit anything).

use std::fmt;

#[derive(Clone, Debug, PartialEq)]
enum Term {
    Int(i64),
    Output,
    Add(Box<Term>, Box<Term>),
    Sub(Box<Term>, Box<Term>),
    Mul(Box<Term>, Box<Term>),
    /// Rounded down; the divisor is a positive literal (checked when parsed).
    Div(Box<Term>, i64),
}

/// A parsed input bound.
#[derive(Clone, Debug, PartialEq)]
pub struct InputLimit {
    term: Term,
    text: String,
}

impl fmt::Display for InputLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Why an input limit does not parse (`--input-limit`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LimitError {
    /// A name other than `output`.
    UnknownName(String),
    /// A character that is no part of the notation.
    UnexpectedChar {
        /// The character.
        ch: char,
        /// The whole formula.
        text: String,
    },
    /// A token where it cannot stand.
    UnexpectedToken(String),
    /// Extra tokens after a whole expression.
    Trailing {
        /// The first token after the expression.
        token: String,
        /// The whole formula.
        text: String,
    },
    /// The expression stops before it is complete.
    EndsEarly,
    /// A `(` without its `)`.
    MissingParen,
    /// A number beyond 64 bits.
    TooLarge(String),
    /// A `/` not followed by a positive number.
    Divisor(String),
}

impl fmt::Display for LimitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitError::UnknownName(s) => {
                write!(
                    f,
                    "unknown name `{s}` in input limit (only `output` is known)"
                )
            }
            LimitError::UnexpectedChar { ch, text } => {
                write!(f, "unexpected character `{ch}` in input limit `{text}`")
            }
            LimitError::UnexpectedToken(t) => write!(f, "unexpected `{t}` in input limit"),
            LimitError::Trailing { token, text } => {
                write!(f, "unexpected `{token}` in input limit `{text}`")
            }
            LimitError::EndsEarly => f.write_str("input limit ends too early"),
            LimitError::MissingParen => f.write_str("missing `)` in input limit"),
            LimitError::TooLarge(n) => write!(f, "number `{n}` too large in input limit"),
            LimitError::Divisor(text) => write!(
                f,
                "a `/` in input limit `{text}` must divide by a positive number, as in `output / 2`"
            ),
        }
    }
}

impl std::error::Error for LimitError {}

impl InputLimit {
    /// Reads an `--input-limit` formula: in the variable `output` (records
    /// emitted so far), with integer literals, `+ - *`, division by a
    /// positive literal (rounded down) and parentheses.
    pub fn parse(text: &str) -> Result<InputLimit, LimitError> {
        let toks = tokenize(text)?;
        let mut p = Parser { toks, pos: 0, text };
        let term = p.sum()?;
        if p.pos != p.toks.len() {
            return Err(LimitError::Trailing {
                token: p.toks[p.pos].clone(),
                text: text.to_string(),
            });
        }
        Ok(InputLimit {
            term,
            text: text.to_string(),
        })
    }

    /// How many input records may have been admitted after `output` outputs.
    pub fn allowed(&self, output: u64) -> i64 {
        eval(&self.term, output as i64)
    }
}

fn eval(t: &Term, out: i64) -> i64 {
    match t {
        Term::Int(v) => *v,
        Term::Output => out,
        Term::Add(a, b) => eval(a, out).saturating_add(eval(b, out)),
        Term::Sub(a, b) => eval(a, out).saturating_sub(eval(b, out)),
        Term::Mul(a, b) => eval(a, out).saturating_mul(eval(b, out)),
        Term::Div(a, n) => eval(a, out).div_euclid(*n),
    }
}

fn tokenize(text: &str) -> Result<Vec<String>, LimitError> {
    let mut toks = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c.is_ascii_digit() {
            let mut s = String::new();
            while let Some(&d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                s.push(d);
                chars.next();
            }
            toks.push(s);
        } else if c.is_ascii_alphabetic() {
            let mut s = String::new();
            while let Some(&d) = chars
                .peek()
                .filter(|d| d.is_ascii_alphanumeric() || **d == '_')
            {
                s.push(d);
                chars.next();
            }
            if s != "output" {
                return Err(LimitError::UnknownName(s));
            }
            toks.push(s);
        } else if "+-*/()".contains(c) {
            toks.push(c.to_string());
            chars.next();
        } else {
            return Err(LimitError::UnexpectedChar {
                ch: c,
                text: text.to_string(),
            });
        }
    }
    Ok(toks)
}

struct Parser<'a> {
    toks: Vec<String>,
    pos: usize,
    text: &'a str,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&str> {
        self.toks.get(self.pos).map(|s| s.as_str())
    }
    fn sum(&mut self) -> Result<Term, LimitError> {
        let mut t = self.product()?;
        while let Some(op) = self
            .peek()
            .filter(|o| *o == "+" || *o == "-")
            .map(str::to_string)
        {
            self.pos += 1;
            let r = self.product()?;
            t = if op == "+" {
                Term::Add(Box::new(t), Box::new(r))
            } else {
                Term::Sub(Box::new(t), Box::new(r))
            };
        }
        Ok(t)
    }
    fn product(&mut self) -> Result<Term, LimitError> {
        let mut t = self.atom()?;
        while let Some(op) = self.peek().filter(|o| *o == "*" || *o == "/") {
            let div = op == "/";
            self.pos += 1;
            let r = self.atom()?;
            t = match r {
                _ if !div => Term::Mul(Box::new(t), Box::new(r)),
                Term::Int(n) if n > 0 => Term::Div(Box::new(t), n),
                _ => return Err(LimitError::Divisor(self.text.to_string())),
            };
        }
        Ok(t)
    }
    fn atom(&mut self) -> Result<Term, LimitError> {
        let tok = self
            .peek()
            .map(str::to_string)
            .ok_or(LimitError::EndsEarly)?;
        self.pos += 1;
        match tok.as_str() {
            "output" => Ok(Term::Output),
            "(" => {
                let t = self.sum()?;
                if self.peek() != Some(")") {
                    return Err(LimitError::MissingParen);
                }
                self.pos += 1;
                Ok(t)
            }
            n if n.chars().all(|c| c.is_ascii_digit()) => n
                .parse()
                .map(Term::Int)
                .map_err(|_| LimitError::TooLarge(n.to_string())),
            other => Err(LimitError::UnexpectedToken(other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_usual_forms() {
        let l = InputLimit::parse("8 + 2*output").unwrap();
        assert_eq!(l.allowed(0), 8);
        assert_eq!(l.allowed(10), 28);
        assert_eq!(InputLimit::parse("(output+1)*3").unwrap().allowed(1), 6);
        assert_eq!(InputLimit::parse("100").unwrap().allowed(5), 100);
        assert!(InputLimit::parse("8 + input").is_err());
        assert!(InputLimit::parse("8 +").is_err());
        assert!(InputLimit::parse("(8").is_err());
    }

    #[test]
    fn divides_by_a_positive_number_rounding_down() {
        let l = InputLimit::parse("20000 + output / 2").unwrap();
        assert_eq!(l.allowed(0), 20000);
        assert_eq!(l.allowed(7), 20003);
        assert_eq!(
            InputLimit::parse("(output - 9) / 4").unwrap().allowed(0),
            -3
        );
        assert_eq!(InputLimit::parse("output * 3 / 2").unwrap().allowed(3), 4);
        for bad in [
            "output / 0",
            "output / output",
            "output / (1 - 1)",
            "output /",
        ] {
            let e = InputLimit::parse(bad).unwrap_err();
            assert!(
                e.to_string().contains("positive number") || matches!(e, LimitError::EndsEarly),
                "{bad}: {e}"
            );
        }
    }
}
