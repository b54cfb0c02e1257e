//! SQL `LIKE` patterns: `%` matches any run of characters, `_` exactly one, `\` escapes.
//!
//! Patterns are matched on UTF-8 bytes; `_` consumes one whole character. A pattern of
//! literals and `%` only (`abc%`, `%abc`, `%abc%def%`) is matched by anchoring its first
//! and last literal and finding the others in order, each with a substring searcher built
//! once (memchr's); the rest by a greedy wildcard matcher with backtracking to the last
//! `%` (linear in practice, never exponential).

use memchr::memmem::Finder;

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
    /// The pattern as literals between `%`s, when it holds a `%` and no `_`.
    percent: Option<Percent>,
}

/// Literals separated by `%`: `start` must begin the value and `end` (if the pattern does
/// not end with `%`) finish it; each of `middle` is found in order, leftmost after the one
/// before (which leaves the most room for the rest, so no backtracking is needed).
#[derive(Debug, Clone)]
struct Percent {
    start: Vec<u8>,
    middle: Vec<Finder<'static>>,
    end: Option<Vec<u8>>,
}

impl Percent {
    fn of(tokens: &[Token]) -> Option<Percent> {
        if !tokens.contains(&Token::Any) || tokens.contains(&Token::One) {
            return None;
        }
        let lit = |t: Option<&Token>| match t {
            Some(Token::Lit(l)) => Some(l.clone()),
            _ => None,
        };
        let start = lit(tokens.first());
        let end = lit(tokens.last());
        let inner =
            &tokens[usize::from(start.is_some())..tokens.len() - usize::from(end.is_some())];
        let middle = (inner.iter())
            .filter_map(|t| lit(Some(t)))
            .map(|l| Finder::new(&l).into_owned())
            .collect();
        Some(Percent {
            start: start.unwrap_or_default(),
            middle,
            end,
        })
    }

    fn matches(&self, v: &[u8]) -> bool {
        // (An empty `start` is not compared: slice equality would call memcmp.)
        if !self.start.is_empty() && !v.starts_with(&self.start) {
            return false;
        }
        let mut at = self.start.len();
        for f in &self.middle {
            match f.find(&v[at..]) {
                Some(p) => at += p + f.needle().len(),
                None => return false,
            }
        }
        self.end
            .as_ref()
            .is_none_or(|e| v.len() - at >= e.len() && v.ends_with(e))
    }
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
        let percent = Percent::of(&tokens);
        Pattern { tokens, percent }
    }

    /// The literal prefix every match starts with, if the pattern begins with one.
    pub(crate) fn prefix(&self) -> Option<Vec<u8>> {
        match self.tokens.first() {
            Some(Token::Lit(l)) => Some(l.clone()),
            _ => None,
        }
    }

    pub(crate) fn matches(&self, v: &[u8]) -> bool {
        if let Some(p) = &self.percent {
            return p.matches(v);
        }
        match self.tokens.as_slice() {
            [] => v.is_empty(),
            [Token::Lit(a)] => v == a.as_slice(),
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
        assert!(!like("%special%requests%", "requests special"));
        assert!(!like("ab%ba", "aba") && like("ab%ba", "abba"));
        assert!(!like("a%aa", "aa"));
        assert!(like("%aa%aa", "aaaa") && !like("%aa%aa", "aaa"));
    }

    /// Every pattern of literals and `%` matches as the backtracking matcher does, over
    /// patterns and values from a small alphabet (where overlaps and repeats are common).
    #[test]
    fn percent_patterns_match_as_the_wildcard_matcher() {
        let alphabet = ['a', 'b', '%'];
        let words = |max: usize, chars: &[char]| {
            let mut out = vec![String::new()];
            let mut last = vec![String::new()];
            for _ in 0..max {
                last = (last.iter())
                    .flat_map(|w| chars.iter().map(move |c| format!("{w}{c}")))
                    .collect();
                out.extend(last.iter().cloned());
            }
            out
        };
        let values = words(5, &['a', 'b']);
        let mut checked = 0;
        for p in words(5, &alphabet) {
            let pattern = Pattern::parse(&p);
            if pattern.percent.is_none() {
                continue;
            }
            for v in &values {
                let want = wildcard(&pattern.tokens, v.as_bytes());
                assert_eq!(pattern.matches(v.as_bytes()), want, "{p:?} on {v:?}");
                checked += 1;
            }
        }
        assert!(checked > 10_000);
    }
}
