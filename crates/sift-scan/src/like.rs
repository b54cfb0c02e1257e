//! SQL `LIKE` patterns: `%` matches any run of characters, `_` exactly one, `\` escapes.
//!
//! Patterns are matched on UTF-8 bytes; `_` consumes one whole character. Common shapes
//! (`abc%`, `%abc`, `%abc%`, literal) take direct byte tests; the rest a greedy
//! wildcard matcher with backtracking to the last `%` (linear in practice, never
//! exponential).

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Lit(Vec<u8>),
    One,
    Any,
}

/// A compiled `LIKE` pattern.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    tokens: Vec<Token>,
}

impl Pattern {
    pub(crate) fn parse(text: &str) -> Pattern {
        let mut tokens: Vec<Token> = Vec::new();
        let mut lit: Vec<u8> = Vec::new();
        let mut chars = text.chars();
        let flush = |lit: &mut Vec<u8>, tokens: &mut Vec<Token>| {
            if !lit.is_empty() {
                tokens.push(Token::Lit(std::mem::take(lit)));
            }
        };
        while let Some(c) = chars.next() {
            match c {
                '%' => {
                    flush(&mut lit, &mut tokens);
                    if tokens.last() != Some(&Token::Any) {
                        tokens.push(Token::Any);
                    }
                }
                '_' => {
                    flush(&mut lit, &mut tokens);
                    tokens.push(Token::One);
                }
                '\\' => {
                    let e = chars.next().unwrap_or('\\');
                    let mut buf = [0u8; 4];
                    lit.extend_from_slice(e.encode_utf8(&mut buf).as_bytes());
                }
                c => {
                    let mut buf = [0u8; 4];
                    lit.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        }
        flush(&mut lit, &mut tokens);
        Pattern { tokens }
    }

    /// The literal prefix every match starts with, if the pattern begins with one.
    pub(crate) fn prefix(&self) -> Option<Vec<u8>> {
        match self.tokens.first() {
            Some(Token::Lit(l)) => Some(l.clone()),
            _ => None,
        }
    }

    pub(crate) fn matches(&self, v: &[u8]) -> bool {
        use Token::*;
        match self.tokens.as_slice() {
            [] => v.is_empty(),
            [Lit(a)] => v == a.as_slice(),
            [Any] => true,
            [Lit(a), Any] => v.starts_with(a),
            [Any, Lit(a)] => v.ends_with(a),
            [Any, Lit(a), Any] => memchr::memmem::find(v, a).is_some(),
            tokens => wildcard(tokens, v),
        }
    }
}

/// Length of the UTF-8 character starting at `v[0]` (1 for stray bytes).
fn char_len(v: &[u8]) -> usize {
    match v.first() {
        Some(b) if *b >= 0xF0 => 4,
        Some(b) if *b >= 0xE0 => 3,
        Some(b) if *b >= 0xC0 => 2,
        _ => 1,
    }
    .min(v.len().max(1))
}

/// Greedy matching with backtracking to the most recent `%`.
fn wildcard(tokens: &[Token], v: &[u8]) -> bool {
    let (mut t, mut i) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    loop {
        if t < tokens.len() {
            match &tokens[t] {
                Token::Any => {
                    star = Some((t, i));
                    t += 1;
                    continue;
                }
                Token::One if i < v.len() => {
                    i += char_len(&v[i..]);
                    t += 1;
                    continue;
                }
                Token::Lit(l) if v[i..].starts_with(l) => {
                    i += l.len();
                    t += 1;
                    continue;
                }
                _ => {}
            }
        } else if i == v.len() {
            return true;
        }
        // Mismatch: let the last `%` absorb one more character.
        match star {
            Some((st, si)) if si < v.len() => {
                let next = si + char_len(&v[si..]);
                star = Some((st, next));
                t = st + 1;
                i = next;
            }
            _ => return false,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn like(p: &str, v: &str) -> bool {
        Pattern::parse(p).matches(v.as_bytes())
    }

    #[test]
    fn shapes() {
        assert!(like("abc", "abc"));
        assert!(!like("abc", "abcd"));
        assert!(like("ab%", "abcd"));
        assert!(like("%cd", "abcd"));
        assert!(like("%bc%", "abcd"));
        assert!(!like("%x%", "abcd"));
        assert!(like("a_c", "abc"));
        assert!(like("a_c", "aéc"));
        assert!(!like("a_c", "abbc"));
        assert!(like("%a%b%c%", "xxaxxbxxcxx"));
        assert!(!like("%a%b%c%", "xxaxxcxxbxx"));
        assert!(like("a%b_", "aXXbY"));
        assert!(like("", ""));
        assert!(!like("", "a"));
        assert!(like("100\\%", "100%"));
        assert!(!like("100\\%", "1000"));
        assert!(like("%", ""));
        assert!(like("_%_", "ab"));
        assert!(!like("_%_", "a"));
        assert!(like("%special%requests%", "blah special foo requests bar"));
    }
}
