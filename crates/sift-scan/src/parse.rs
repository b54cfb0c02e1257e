//! The filter language: text to [`Expr`], by hand-written recursive descent.
//!
//! ```text
//! expr      := or
//! or        := and ('or' and)*
//! and       := not ('and' not)*
//! not       := 'not' not | primary
//! primary   := '(' expr ')' | 'true' | 'false' | predicate
//! predicate := ident op literal | literal op ident | ident op ident
//!            | ident ['not'] 'between' literal 'and' literal
//!            | ident ['not'] 'in' '(' [literal (',' literal)*] ')'
//!            | ident 'is' ['not'] 'null'
//!            | ident ['not'] 'like' string
//!            | 'starts_with' '(' ident ',' string ')'
//! op        := '=' | '==' | '!=' | '<>' | '<' | '<=' | '>' | '>='
//! literal   := integer | decimal | string | 'date' string | 'timestamp' string
//!            | 'true' | 'false'
//! integer   := '-'? digit+
//! decimal   := '-'? (digit+ ['.' digit*] | '.' digit+) [('e' | 'E') ['+' | '-'] digit+]
//!              (with a point or an exponent; read exactly, at most 38 significant digits)
//! ident     := [A-Za-z_][A-Za-z0-9_.]* | '"' ('""' | any but '"')* '"'
//! string    := "'" ("''" | any but "'")* "'"
//! ```
//!
//! Keywords are case-insensitive and are column names only when double-quoted. This is
//! the syntax `Expr`'s `Display` prints, so printing and parsing round-trip.

use crate::error::{Error, Result, shorten};
use crate::expr::{CmpOp, Expr, Literal};

/// Words with a meaning in the grammar; a column with one of these names must be quoted.
pub(crate) const KEYWORDS: &[&str] = &[
    "and",
    "or",
    "not",
    "between",
    "in",
    "is",
    "null",
    "like",
    "true",
    "false",
    "date",
    "timestamp",
];

/// Parses a filter such as `l_shipdate >= date '1994-01-01' and l_quantity < 24`.
///
/// Errors are [`Error::Parse`] naming the 1-based character column and what was expected
/// there, e.g. `at column 15: expected a literal after '>=', found 'and'`, then the filter
/// around that column (at most 40 characters each side, "…" where cut) with a caret:
///
/// ```text
/// at column 15: expected a literal after '>=', found 'and'
///   l_quantity >= and x = 1
///                 ^
/// ```
pub fn parse_filter(text: &str) -> Result<Expr> {
    parse(text).map_err(|e| {
        Error::Parse(format!(
            "at column {}: {}\n{}",
            e.col,
            e.message,
            excerpt(text, e.col)
        ))
    })
}

fn parse(text: &str) -> PResult<Expr> {
    let mut parser = Parser {
        tokens: tokenize(text)?,
        pos: 0,
        depth: 0,
    };
    if parser.peek().kind == Tok::End {
        return Err(parser.unexpected("a filter"));
    }
    let expr = parser.or()?;
    if parser.peek().kind != Tok::End {
        return Err(parser.unexpected("'and', 'or' or the end of the filter"));
    }
    Ok(expr)
}

/// Characters of the filter an error shows on each side of the failing position.
const EXCERPT_SIDE: usize = 40;

/// The filter around 1-based character column `col` on one line, "…" where it is cut,
/// and a caret under the column below it: a message about a 200 KB filter stays short.
fn excerpt(text: &str, col: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    let at = col.saturating_sub(1).min(chars.len());
    let start = at.saturating_sub(EXCERPT_SIDE);
    let end = (at + EXCERPT_SIDE).min(chars.len());
    // Line breaks and tabs as spaces, so the caret lines up.
    let shown: String = chars[start..end]
        .iter()
        .map(|&c| {
            if c.is_whitespace() || c.is_control() {
                ' '
            } else {
                c
            }
        })
        .collect();
    let (before, after) = (
        if start > 0 { "…" } else { "" },
        if end < chars.len() { "…" } else { "" },
    );
    let pad = at - start + before.chars().count();
    format!("  {before}{shown}{after}\n  {}^", " ".repeat(pad))
}

// ------------------------------------------------------------------------------ tokens

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// A bare word: a keyword or an unquoted identifier.
    Word(String),
    /// A `"double quoted"` identifier, unescaped.
    QuotedIdent(String),
    /// A `'single quoted'` string, unescaped.
    Str(String),
    Int(i128),
    /// A number with a point or an exponent, exactly: `unscaled × 10^-scale`.
    Decimal(i128, i32),
    Op(CmpOp),
    LParen,
    RParen,
    Comma,
    End,
}

#[derive(Debug, Clone)]
struct Token {
    kind: Tok,
    /// 1-based character column of the token's first character.
    col: usize,
    /// The source text, for messages.
    text: String,
}

/// A parse error: the 1-based character column it is at, and what is wrong there.
struct Located {
    col: usize,
    message: String,
}

type PResult<T> = std::result::Result<T, Located>;

fn parse_error(col: usize, message: impl std::fmt::Display) -> Located {
    Located {
        col,
        message: message.to_string(),
    }
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.'
}

fn tokenize(text: &str) -> PResult<Vec<Token>> {
    let chars: Vec<char> = text.chars().collect();
    let at = |i: usize| chars.get(i).copied();
    let slice = |a: usize, b: usize| chars[a..b].iter().collect::<String>();
    let mut tokens = Vec::new();
    let mut i = 0;
    while let Some(c) = at(i) {
        let start = i;
        let kind = match c {
            c if c.is_whitespace() => {
                i += 1;
                continue;
            }
            '(' | ')' | ',' => {
                i += 1;
                match c {
                    '(' => Tok::LParen,
                    ')' => Tok::RParen,
                    _ => Tok::Comma,
                }
            }
            '=' | '!' | '<' | '>' => {
                let next = at(i + 1);
                let (op, len) = match (c, next) {
                    ('=', Some('=')) => (CmpOp::Eq, 2),
                    ('=', _) => (CmpOp::Eq, 1),
                    ('!', Some('=')) => (CmpOp::Ne, 2),
                    ('!', _) => return Err(parse_error(start + 1, "expected '=' after '!'")),
                    ('<', Some('>')) => (CmpOp::Ne, 2),
                    ('<', Some('=')) => (CmpOp::Le, 2),
                    ('<', _) => (CmpOp::Lt, 1),
                    (_, Some('=')) => (CmpOp::Ge, 2),
                    _ => (CmpOp::Gt, 1),
                };
                i += len;
                Tok::Op(op)
            }
            '\'' | '"' => {
                let (value, end) = quoted(&chars, start)?;
                i = end;
                if c == '\'' {
                    Tok::Str(value)
                } else {
                    Tok::QuotedIdent(value)
                }
            }
            c if c.is_ascii_digit()
                || (c == '.' && at(i + 1).is_some_and(|d| d.is_ascii_digit()))
                || (c == '-'
                    && at(i + 1).is_some_and(|d| {
                        d.is_ascii_digit()
                            || (d == '.' && at(i + 2).is_some_and(|e| e.is_ascii_digit()))
                    })) =>
            {
                let (kind, end) = number(&chars, start)?;
                i = end;
                kind
            }
            c if is_ident_start(c) => {
                while at(i).is_some_and(is_ident_char) {
                    i += 1;
                }
                Tok::Word(slice(start, i))
            }
            c => {
                return Err(parse_error(
                    start + 1,
                    format!(
                        "unexpected character '{c}' (double-quote column names that \
                         contain it: \"name\")"
                    ),
                ));
            }
        };
        tokens.push(Token {
            kind,
            col: start + 1,
            text: slice(start, i),
        });
    }
    tokens.push(Token {
        kind: Tok::End,
        col: chars.len() + 1,
        text: String::new(),
    });
    Ok(tokens)
}

/// The text of the quoted token opening at `start` (a doubled quote stands for one), and
/// the index just past its closing quote.
fn quoted(chars: &[char], start: usize) -> PResult<(String, usize)> {
    let quote = chars.get(start).copied().unwrap_or('\'');
    let mut value = String::new();
    let mut i = start + 1;
    loop {
        match chars.get(i).copied() {
            None => {
                let what = if quote == '\'' {
                    "string"
                } else {
                    "quoted column name"
                };
                return Err(parse_error(
                    start + 1,
                    format!("unterminated {what}: no closing {quote}"),
                ));
            }
            Some(c) if c == quote => {
                if chars.get(i + 1) == Some(&quote) {
                    value.push(quote);
                    i += 2;
                } else {
                    return Ok((value, i + 1));
                }
            }
            Some(c) => {
                value.push(c);
                i += 1;
            }
        }
    }
}

/// A number starting at `start`: `-?digits[.digits][e[+-]digits]` or `-?.digits[…]`.
/// Integers (no point, no exponent) become `Int`, the rest exact decimals.
fn number(chars: &[char], start: usize) -> PResult<(Tok, usize)> {
    let digit_at = |i: usize| chars.get(i).is_some_and(char::is_ascii_digit);
    let mut i = start;
    if chars.get(i) == Some(&'-') {
        i += 1;
    }
    while digit_at(i) {
        i += 1;
    }
    let mut float = false;
    if chars.get(i) == Some(&'.') {
        float = true;
        i += 1;
        while digit_at(i) {
            i += 1;
        }
    }
    if matches!(chars.get(i), Some('e' | 'E')) {
        let sign = usize::from(matches!(chars.get(i + 1), Some('+' | '-')));
        if digit_at(i + 1 + sign) {
            float = true;
            i += 1 + sign;
            while digit_at(i) {
                i += 1;
            }
        }
    }
    let text: String = chars[start..i].iter().collect();
    // `12abc` or `1.2.3` is a typo, not a number followed by a column name.
    if let Some(&c) = chars.get(i)
        && (is_ident_char(c) || c == '.')
    {
        let mut end = i;
        while chars.get(end).is_some_and(|&c| is_ident_char(c)) {
            end += 1;
        }
        let bad: String = chars[start..end].iter().collect();
        return Err(parse_error(
            start + 1,
            format!("invalid number '{}'", shorten(&bad)),
        ));
    }
    let kind = if float {
        let (unscaled, scale) = crate::coerce::parse_decimal(&text)
            .map_err(|why| parse_error(start + 1, format!("number {why}")))?;
        Tok::Decimal(unscaled, scale)
    } else {
        match text.parse::<i128>() {
            Ok(n) => Tok::Int(n),
            Err(_) => {
                return Err(parse_error(
                    start + 1,
                    format!("integer '{}' is out of range", shorten(&text)),
                ));
            }
        }
    };
    Ok((kind, i))
}

// ------------------------------------------------------------------------------ parser

/// Nesting levels (`not`, parentheses) a filter may have.
const MAX_DEPTH: usize = 256;

struct Parser {
    /// Always ends with a `Tok::End`.
    tokens: Vec<Token>,
    pos: usize,
    /// Current nesting of `not` and parentheses.
    depth: usize,
}

fn keyword(tok: &Tok) -> Option<&'static str> {
    match tok {
        Tok::Word(w) => KEYWORDS.iter().copied().find(|k| k.eq_ignore_ascii_case(w)),
        _ => None,
    }
}

/// How a token is named in an error message.
fn describe(token: &Token) -> String {
    match token.kind {
        Tok::End => "the end of the filter".to_string(),
        Tok::Str(_) | Tok::QuotedIdent(_) => shorten(&token.text),
        _ => format!("'{}'", shorten(&token.text)),
    }
}

impl Parser {
    fn peek(&self) -> &Token {
        self.peek_at(0)
    }

    fn peek_at(&self, ahead: usize) -> &Token {
        let last = self.tokens.len().saturating_sub(1);
        &self.tokens[(self.pos + ahead).min(last)]
    }

    fn advance(&mut self) -> Token {
        let token = self.peek().clone();
        if self.pos < self.tokens.len() {
            self.pos += 1;
        }
        token
    }

    fn at_keyword(&self, kw: &str) -> bool {
        keyword(&self.peek().kind) == Some(kw)
    }

    fn eat_keyword(&mut self, kw: &str) -> bool {
        let here = self.at_keyword(kw);
        if here {
            self.pos += 1;
        }
        here
    }

    /// "at column N: expected {what}, found {next token}".
    fn unexpected(&self, what: &str) -> Located {
        let token = self.peek();
        let mut message = format!("expected {what}, found {}", describe(token));
        // A keyword just before an operator was most likely meant as a column name.
        if let Some(kw) = keyword(&token.kind)
            && matches!(self.peek_at(1).kind, Tok::Op(_))
        {
            message.push_str(&format!(
                " ('{kw}' is a keyword; write \"{}\" for a column of that name)",
                token.text
            ));
        }
        parse_error(token.col, message)
    }

    fn or(&mut self) -> PResult<Expr> {
        let first = self.and()?;
        if !self.at_keyword("or") {
            return Ok(first);
        }
        let mut terms = vec![first];
        while self.eat_keyword("or") {
            terms.push(self.and()?);
        }
        Ok(Expr::Or(terms))
    }

    fn and(&mut self) -> PResult<Expr> {
        let first = self.not()?;
        if !self.at_keyword("and") {
            return Ok(first);
        }
        let mut terms = vec![first];
        while self.eat_keyword("and") {
            terms.push(self.not()?);
        }
        Ok(Expr::And(terms))
    }

    fn not(&mut self) -> PResult<Expr> {
        // Every level of `not` and `(` passes here; a bound keeps hostile input such as
        // "((((…" from overflowing the stack.
        if self.depth >= MAX_DEPTH {
            return Err(parse_error(
                self.peek().col,
                format!("the filter nests deeper than {MAX_DEPTH} levels"),
            ));
        }
        self.depth += 1;
        let expr = if self.eat_keyword("not") {
            self.not().map(|e| Expr::Not(Box::new(e)))
        } else {
            self.primary()
        };
        self.depth -= 1;
        expr
    }

    fn primary(&mut self) -> PResult<Expr> {
        let token = self.peek().clone();
        match &token.kind {
            Tok::LParen => {
                self.advance();
                let inner = self.or()?;
                if self.peek().kind != Tok::RParen {
                    return Err(
                        self.unexpected(&format!("')' to close the '(' at column {}", token.col))
                    );
                }
                self.advance();
                Ok(inner)
            }
            Tok::Word(w)
                if w.eq_ignore_ascii_case("starts_with") && self.peek_at(1).kind == Tok::LParen =>
            {
                self.starts_with()
            }
            Tok::Word(_) | Tok::QuotedIdent(_) if self.at_identifier() => {
                let column = self.identifier("a column name")?;
                self.predicate(column)
            }
            // `true`/`false` alone are constants; before an operator, literals.
            Tok::Word(_)
                if matches!(keyword(&token.kind), Some("true" | "false"))
                    && !matches!(self.peek_at(1).kind, Tok::Op(_)) =>
            {
                self.advance();
                Ok(if token.text.eq_ignore_ascii_case("true") {
                    Expr::And(vec![])
                } else {
                    Expr::Or(vec![])
                })
            }
            Tok::Int(_) | Tok::Decimal(..) | Tok::Str(_) => self.literal_first(),
            Tok::Word(_)
                if matches!(
                    keyword(&token.kind),
                    Some("true" | "false" | "date" | "timestamp")
                ) =>
            {
                self.literal_first()
            }
            _ => Err(self.unexpected("a column name, 'not', 'true', 'false' or '('")),
        }
    }

    /// Whether the next token is a column name (a quoted name or a non-keyword word).
    fn at_identifier(&self) -> bool {
        match &self.peek().kind {
            Tok::QuotedIdent(_) => true,
            t @ Tok::Word(_) => keyword(t).is_none(),
            _ => false,
        }
    }

    fn identifier(&mut self, what: &str) -> PResult<String> {
        if !self.at_identifier() {
            return Err(self.unexpected(what));
        }
        match self.advance().kind {
            Tok::Word(w) | Tok::QuotedIdent(w) => Ok(w),
            _ => Err(self.unexpected(what)),
        }
    }

    fn operator(&mut self, what: &str) -> PResult<(CmpOp, String)> {
        match self.peek().kind {
            Tok::Op(op) => {
                let token = self.advance();
                Ok((op, token.text))
            }
            _ => Err(self.unexpected(what)),
        }
    }

    /// `literal op column`, stored as `column flipped-op literal`.
    fn literal_first(&mut self) -> PResult<Expr> {
        let value = self.literal("a column name or a literal")?;
        let (op, op_text) =
            self.operator("a comparison operator (=, <>, <, <=, >, >=) after the literal")?;
        let column = self.identifier(&format!(
            "a column name after '{op_text}' (one side of a comparison must be a column)"
        ))?;
        Ok(Expr::Cmp {
            column,
            op: op.flip(),
            value,
        })
    }

    /// What follows a column name at the start of a predicate.
    fn predicate(&mut self, column: String) -> PResult<Expr> {
        if let Tok::Op(op) = self.peek().kind {
            let op_text = self.advance().text;
            if self.at_identifier() {
                let right = self.identifier("a column name")?;
                return Ok(Expr::ColumnCmp {
                    left: column,
                    op,
                    right,
                });
            }
            let value = self.literal(&format!("a literal after '{op_text}'"))?;
            return Ok(Expr::Cmp { column, op, value });
        }
        if self.eat_keyword("is") {
            let negated = self.eat_keyword("not");
            if !self.eat_keyword("null") {
                let what = if negated {
                    "'null' after 'is not'"
                } else {
                    "'null' or 'not null' after 'is'"
                };
                return Err(self.unexpected(what));
            }
            return Ok(Expr::IsNull { column, negated });
        }
        let negated = self.eat_keyword("not");
        let expr = if self.eat_keyword("between") {
            let low = self.literal("a literal after 'between'")?;
            if !self.eat_keyword("and") {
                return Err(self.unexpected("'and' between the bounds of 'between'"));
            }
            let high = self.literal("a literal after 'between … and'")?;
            Expr::Between { column, low, high }
        } else if self.eat_keyword("in") {
            let values = self.in_list()?;
            Expr::In { column, values }
        } else if self.eat_keyword("like") {
            let pattern = self.string("a quoted pattern after 'like'")?;
            Expr::Like { column, pattern }
        } else if negated {
            return Err(self.unexpected("'between', 'in' or 'like' after 'not'"));
        } else {
            return Err(self.unexpected(&format!(
                "a comparison operator, 'between', 'in', 'is', 'like' or 'not' after \
                 the column name '{}'",
                shorten(&column)
            )));
        };
        Ok(if negated {
            Expr::Not(Box::new(expr))
        } else {
            expr
        })
    }

    /// `( literal, … )`; the list may be empty (matching no row).
    fn in_list(&mut self) -> PResult<Vec<Literal>> {
        if self.peek().kind != Tok::LParen {
            return Err(self.unexpected("'(' after 'in'"));
        }
        self.advance();
        let mut values = Vec::new();
        if self.peek().kind == Tok::RParen {
            self.advance();
            return Ok(values);
        }
        loop {
            values.push(self.literal("a literal in the 'in' list")?);
            match self.peek().kind {
                Tok::Comma => {
                    self.advance();
                }
                Tok::RParen => {
                    self.advance();
                    return Ok(values);
                }
                _ => return Err(self.unexpected("',' or ')' in the 'in' list")),
            }
        }
    }

    /// `starts_with(column, 'prefix')`.
    fn starts_with(&mut self) -> PResult<Expr> {
        self.advance();
        self.advance(); // the '(' the caller saw
        let column = self.identifier("a column name as the first argument of starts_with")?;
        if self.peek().kind != Tok::Comma {
            return Err(self.unexpected("',' after the column name in starts_with"));
        }
        self.advance();
        let prefix = self.string("a quoted prefix as the second argument of starts_with")?;
        if self.peek().kind != Tok::RParen {
            return Err(self.unexpected("')' to close starts_with"));
        }
        self.advance();
        Ok(Expr::StartsWith { column, prefix })
    }

    fn string(&mut self, what: &str) -> PResult<String> {
        match &self.peek().kind {
            Tok::Str(s) => {
                let s = s.clone();
                self.advance();
                Ok(s)
            }
            _ => Err(self.unexpected(what)),
        }
    }

    /// The string after a `date` or `timestamp` keyword (the next token).
    fn typed_string(&mut self, what: &str) -> PResult<String> {
        if !matches!(self.peek_at(1).kind, Tok::Str(_)) {
            // `date = …`: the keyword itself is the problem, so point at it.
            if matches!(self.peek_at(1).kind, Tok::Op(_)) {
                return Err(self.unexpected("a literal"));
            }
            self.advance();
            return Err(self.unexpected(what));
        }
        self.advance();
        self.string(what)
    }

    fn literal(&mut self, what: &str) -> PResult<Literal> {
        let token = self.peek().clone();
        let value = match &token.kind {
            Tok::Int(n) => Literal::Int(*n),
            Tok::Decimal(unscaled, scale) => Literal::Decimal {
                unscaled: *unscaled,
                scale: *scale,
            },
            Tok::Str(s) => Literal::Str(s.clone()),
            t => match keyword(t) {
                Some("true") => Literal::Bool(true),
                Some("false") => Literal::Bool(false),
                Some("date") => {
                    let col = self.peek_at(1).col;
                    let text =
                        self.typed_string("a quoted date after 'date', like '1994-01-01'")?;
                    return Literal::date(&text).ok_or_else(|| {
                        let text = shorten(&text);
                        parse_error(col, format!("invalid date '{text}' (expected YYYY-MM-DD)"))
                    });
                }
                Some("timestamp") => {
                    // Checked when the filter meets the column's type (see `Literal`).
                    let text = self.typed_string(
                        "a quoted timestamp after 'timestamp', like '1994-01-01 12:00:00'",
                    )?;
                    return Ok(Literal::Str(text));
                }
                _ => return Err(self.unexpected(what)),
            },
        };
        self.advance();
        Ok(value)
    }
}
