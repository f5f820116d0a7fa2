//! Label and field selectors: parsing and matching, with the syntax of the Kubernetes API.
//!
//! ```
//! use std::collections::BTreeMap;
//! use herald_grammar::selector::LabelSelector;
//!
//! let sel = LabelSelector::parse("app=web,tier in (front, back),!canary").unwrap();
//! let labels = BTreeMap::from([("app".to_string(), "web".to_string()),
//!                              ("tier".to_string(), "front".to_string())]);
//! assert!(sel.matches(&labels));
//! ```

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

/// Why a selector could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unable to parse requirement: {0}")]
pub struct SelectorError(pub String);

/// The operator of one label requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    /// `key=value` or `key==value`.
    Equals,
    /// `key!=value` (also matches when the label is absent).
    NotEquals,
    /// `key in (a,b)`.
    In,
    /// `key notin (a,b)` (also matches when the label is absent).
    NotIn,
    /// `key`: the label is present.
    Exists,
    /// `!key`: the label is absent.
    DoesNotExist,
    /// `key>N`: the label is an integer greater than N.
    GreaterThan,
    /// `key<N`: the label is an integer less than N.
    LessThan,
}

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The label key.
    pub key: String,
    /// The operator.
    pub operator: Operator,
    /// The values (empty for `Exists`/`DoesNotExist`, one for `=`, `!=`, `>`, `<`).
    pub values: Vec<String>,
}

impl Requirement {
    fn matches<'a>(&self, get: &dyn Fn(&str) -> Option<&'a str>) -> bool {
        let value = get(&self.key);
        match self.operator {
            Operator::Equals | Operator::In => {
                value.is_some_and(|v| self.values.iter().any(|x| x == v))
            }
            Operator::NotEquals | Operator::NotIn => {
                !value.is_some_and(|v| self.values.iter().any(|x| x == v))
            }
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(v), Some(bound)) = (
                    value.and_then(|v| v.parse::<i64>().ok()),
                    self.values.first().and_then(|b| b.parse::<i64>().ok()),
                ) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    v > bound
                } else {
                    v < bound
                }
            }
        }
    }
}

/// A parsed label selector: every requirement must hold (comma means AND).
///
/// The empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    /// The requirements, all of which must match.
    pub requirements: Vec<Requirement>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Ident(String),
    Not,
    Eq,
    DoubleEq,
    NotEq,
    Gt,
    Lt,
    LParen,
    RParen,
    Comma,
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Ident(s) => write!(f, "{s:?}"),
            Token::Not => f.write_str("'!'"),
            Token::Eq => f.write_str("'='"),
            Token::DoubleEq => f.write_str("'=='"),
            Token::NotEq => f.write_str("'!='"),
            Token::Gt => f.write_str("'>'"),
            Token::Lt => f.write_str("'<'"),
            Token::LParen => f.write_str("'('"),
            Token::RParen => f.write_str("')'"),
            Token::Comma => f.write_str("','"),
        }
    }
}

fn lex(input: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let chars: Vec<char> = input.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            c if c.is_whitespace() => i += 1,
            '!' if next == Some('=') => {
                tokens.push(Token::NotEq);
                i += 2;
            }
            '!' => {
                tokens.push(Token::Not);
                i += 1;
            }
            '=' if next == Some('=') => {
                tokens.push(Token::DoubleEq);
                i += 2;
            }
            '=' => {
                tokens.push(Token::Eq);
                i += 1;
            }
            '>' => {
                tokens.push(Token::Gt);
                i += 1;
            }
            '<' => {
                tokens.push(Token::Lt);
                i += 1;
            }
            '(' => {
                tokens.push(Token::LParen);
                i += 1;
            }
            ')' => {
                tokens.push(Token::RParen);
                i += 1;
            }
            ',' => {
                tokens.push(Token::Comma);
                i += 1;
            }
            _ => {
                let start = i;
                while i < chars.len() && !chars[i].is_whitespace() && !"!=<>(),".contains(chars[i])
                {
                    i += 1;
                }
                tokens.push(Token::Ident(chars[start..i].iter().collect()));
            }
        }
    }
    tokens
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos)
    }

    fn next(&mut self) -> Option<Token> {
        let t = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn ident(&mut self, what: &str) -> Result<String, SelectorError> {
        match self.next() {
            Some(Token::Ident(s)) => Ok(s),
            Some(t) => Err(SelectorError(format!("found {t}, expected: {what}"))),
            None => Err(SelectorError(format!(
                "found end of input, expected: {what}"
            ))),
        }
    }

    /// A single value after `=`, `==`, `!=`: may be empty (`key=`).
    fn single_value(&mut self) -> Result<String, SelectorError> {
        match self.peek() {
            None | Some(Token::Comma) => Ok(String::new()),
            _ => self.ident("value"),
        }
    }

    fn value_set(&mut self) -> Result<Vec<String>, SelectorError> {
        match self.next() {
            Some(Token::LParen) => {}
            other => {
                return Err(SelectorError(format!(
                    "found {}, expected: '('",
                    other
                        .map(|t| t.to_string())
                        .unwrap_or_else(|| "end of input".into())
                )));
            }
        }
        let mut values = Vec::new();
        loop {
            match self.next() {
                Some(Token::Ident(v)) => values.push(v),
                Some(Token::RParen) if values.is_empty() => {
                    return Err(SelectorError(
                        "for 'in', 'notin' operators, values set can't be empty".into(),
                    ));
                }
                Some(Token::Comma) => {
                    values.push(String::new());
                    continue;
                }
                other => {
                    return Err(SelectorError(format!(
                        "found {}, expected: value",
                        other
                            .map(|t| t.to_string())
                            .unwrap_or_else(|| "end of input".into())
                    )));
                }
            }
            match self.next() {
                Some(Token::Comma) => continue,
                Some(Token::RParen) => break,
                other => {
                    return Err(SelectorError(format!(
                        "found {}, expected: ',' or ')'",
                        other
                            .map(|t| t.to_string())
                            .unwrap_or_else(|| "end of input".into())
                    )));
                }
            }
        }
        Ok(values)
    }

    fn requirement(&mut self) -> Result<Requirement, SelectorError> {
        if self.peek() == Some(&Token::Not) {
            self.pos += 1;
            let key = self.ident("identifier")?;
            return Ok(Requirement {
                key,
                operator: Operator::DoesNotExist,
                values: vec![],
            });
        }
        let key = self.ident("identifier")?;
        let (operator, values) = match self.peek() {
            None | Some(Token::Comma) => (Operator::Exists, vec![]),
            Some(Token::Eq) | Some(Token::DoubleEq) => {
                self.pos += 1;
                (Operator::Equals, vec![self.single_value()?])
            }
            Some(Token::NotEq) => {
                self.pos += 1;
                (Operator::NotEquals, vec![self.single_value()?])
            }
            Some(Token::Gt) | Some(Token::Lt) => {
                let op = if self.next() == Some(Token::Gt) {
                    Operator::GreaterThan
                } else {
                    Operator::LessThan
                };
                let v = self.ident("integer value")?;
                if v.parse::<i64>().is_err() {
                    return Err(SelectorError(format!(
                        "for 'Gt', 'Lt' operators, the value must be an integer: {v:?}"
                    )));
                }
                (op, vec![v])
            }
            Some(Token::Ident(word)) if word == "in" || word == "notin" => {
                let op = if word == "in" {
                    Operator::In
                } else {
                    Operator::NotIn
                };
                self.pos += 1;
                (op, self.value_set()?)
            }
            Some(t) => {
                return Err(SelectorError(format!(
                    "found {t}, expected: in, notin, =, ==, !=, gt, lt"
                )));
            }
        };
        Ok(Requirement {
            key,
            operator,
            values,
        })
    }
}

impl LabelSelector {
    /// Parse a selector in the API's string syntax (`a=b,c!=d,e in (f,g),h,!i`).
    pub fn parse(input: &str) -> Result<Self, SelectorError> {
        let mut parser = Parser {
            tokens: lex(input),
            pos: 0,
        };
        let mut requirements = Vec::new();
        if parser.tokens.is_empty() {
            return Ok(LabelSelector { requirements });
        }
        loop {
            let req = parser.requirement()?;
            validate_label_key(&req.key)?;
            for v in &req.values {
                validate_label_value(v)?;
            }
            requirements.push(req);
            match parser.next() {
                None => break,
                Some(Token::Comma) => continue,
                Some(t) => return Err(SelectorError(format!("found {t}, expected: ','"))),
            }
        }
        Ok(LabelSelector { requirements })
    }

    /// Whether the selector selects everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether a set of labels satisfies every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let get = |k: &str| labels.get(k).map(String::as_str);
        self.requirements.iter().all(|r| r.matches(&get))
    }

    /// Whether labels looked up through `get` satisfy every requirement; for
    /// callers that keep labels in their own structure (Herald's cache).
    pub fn matches_with<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| r.matches(&get))
    }

    /// Whether a JSON `metadata.labels` map (possibly absent) satisfies every requirement.
    pub fn matches_json(&self, labels: Option<&Map<String, Value>>) -> bool {
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.requirements.iter().all(|r| r.matches(&get))
    }
}

/// The API's syntax, one requirement after the other: `app=web,tier in (a,b),!canary`.
/// A requirement that [`LabelSelector::parse`] returned is written so that it
/// parses back to an equal one (`==` is written `=`, spaces are dropped).
impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = &self.key;
        let first = self.values.first().map(String::as_str).unwrap_or("");
        match self.operator {
            Operator::Equals => write!(f, "{key}={first}"),
            Operator::NotEquals => write!(f, "{key}!={first}"),
            Operator::In => write!(f, "{key} in ({})", self.values.join(",")),
            Operator::NotIn => write!(f, "{key} notin ({})", self.values.join(",")),
            Operator::Exists => f.write_str(key),
            Operator::DoesNotExist => write!(f, "!{key}"),
            Operator::GreaterThan => write!(f, "{key}>{first}"),
            Operator::LessThan => write!(f, "{key}<{first}"),
        }
    }
}

/// The requirements in the API's syntax, joined by `,`: what
/// [`LabelSelector::parse`] reads back to an equal selector.
impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, requirement) in self.requirements.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

fn is_alnum(c: char) -> bool {
    c.is_ascii_alphanumeric()
}

fn validate_name_part(name: &str, what: &str) -> Result<(), SelectorError> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(is_alnum)
        && name.ends_with(is_alnum)
        && name
            .chars()
            .all(|c| is_alnum(c) || c == '-' || c == '_' || c == '.');
    if ok {
        Ok(())
    } else {
        Err(SelectorError(format!(
            "invalid {what} {name:?}: must be 63 characters or less, beginning and ending with \
             an alphanumeric character ([a-z0-9A-Z]) with dashes (-), underscores (_), dots (.), \
             and alphanumerics between"
        )))
    }
}

/// Checks one label, `key: value`, by the API's rules for label keys
/// (an optional DNS-subdomain prefix and a name part) and values.
pub fn validate_label(key: &str, value: &str) -> Result<(), SelectorError> {
    validate_label_key(key)?;
    validate_label_value(value)
}

fn validate_label_key(key: &str) -> Result<(), SelectorError> {
    let name = match key.split_once('/') {
        Some((prefix, name)) => {
            if !crate::name::is_dns1123_subdomain(prefix) {
                return Err(SelectorError(format!(
                    "invalid label key {key:?}: prefix part must be a lowercase RFC 1123 subdomain"
                )));
            }
            name
        }
        None => key,
    };
    validate_name_part(name, "label key")
}

fn validate_label_value(value: &str) -> Result<(), SelectorError> {
    if value.is_empty() {
        return Ok(());
    }
    validate_name_part(value, "label value")
}

/// The operator of a field selector term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldOperator {
    /// `field=value` or `field==value`.
    Equals,
    /// `field!=value`.
    NotEquals,
}

/// One term of a field selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldTerm {
    /// The field path (`metadata.name`).
    pub field: String,
    /// The operator.
    pub operator: FieldOperator,
    /// The value to compare with.
    pub value: String,
}

/// A parsed field selector: every term must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    /// The terms, all of which must match.
    pub terms: Vec<FieldTerm>,
}

/// Split on unescaped `sep`, keeping escapes in the parts.
fn split_unescaped(input: &str, sep: char) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut chars = input.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            current.push(c);
            if let Some(n) = chars.next() {
                current.push(n);
            }
        } else if c == sep {
            parts.push(std::mem::take(&mut current));
        } else {
            current.push(c);
        }
    }
    parts.push(current);
    parts
}

/// Splits a term at its first operator: `(field, operator, raw value)`.
fn split_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    const OPERATORS: [(&str, FieldOperator); 3] = [
        ("!=", FieldOperator::NotEquals),
        ("==", FieldOperator::Equals),
        ("=", FieldOperator::Equals),
    ];
    term.char_indices().find_map(|(at, _)| {
        let rest = &term[at..];
        OPERATORS
            .iter()
            .find(|(symbol, _)| rest.starts_with(symbol))
            .map(|(symbol, operator)| (&term[..at], *operator, &rest[symbol.len()..]))
    })
}

fn unescape(value: &str) -> Result<String, SelectorError> {
    let mut out = String::new();
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(n @ ('\\' | ',' | '=')) => out.push(n),
                _ => {
                    return Err(SelectorError(format!(
                        "invalid field selector value escape in {value:?}"
                    )));
                }
            },
            '=' | ',' => {
                return Err(SelectorError(format!(
                    "invalid field selector value {value:?}: escape {c:?} as \"\\{c}\""
                )));
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

impl FieldSelector {
    /// Parse a field selector (`metadata.name=foo,metadata.namespace!=bar`)
    /// as the API server does: a term is split at its first `!=`, `==` or
    /// `=` (a field cannot be escaped), spaces belong to the field or value,
    /// and a value's `\`, `,` and `=` must be escaped with `\`.
    pub fn parse(input: &str) -> Result<Self, SelectorError> {
        let mut terms = Vec::new();
        if input.trim().is_empty() {
            return Ok(FieldSelector { terms });
        }
        for part in split_unescaped(input, ',') {
            let Some((field, operator, value)) = split_term(&part) else {
                return Err(SelectorError(format!(
                    "invalid field selector: {part:?}: expected field=value, field==value or field!=value"
                )));
            };
            if field.is_empty() {
                return Err(SelectorError(format!(
                    "invalid field selector: {part:?}: empty field"
                )));
            }
            terms.push(FieldTerm {
                field: field.to_string(),
                operator,
                value: unescape(value)?,
            });
        }
        Ok(FieldSelector { terms })
    }

    /// Whether the selector selects everything.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether every term holds, reading field values with `get` (absent fields read as `""`).
    pub fn matches(&self, get: impl Fn(&str) -> String) -> bool {
        self.terms.iter().all(|t| {
            let v = get(&t.field);
            match t.operator {
                FieldOperator::Equals => v == t.value,
                FieldOperator::NotEquals => v != t.value,
            }
        })
    }
}

/// The API's syntax, `field=value` or `field!=value`, with `\`, `,` and `=`
/// in the value escaped by a backslash.
impl fmt::Display for FieldTerm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let operator = match self.operator {
            FieldOperator::Equals => "=",
            FieldOperator::NotEquals => "!=",
        };
        write!(f, "{}{operator}", self.field)?;
        for c in self.value.chars() {
            if matches!(c, '\\' | ',' | '=') {
                f.write_str("\\")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

/// The terms in the API's syntax, joined by `,`: what
/// [`FieldSelector::parse`] reads back to an equal selector.
impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, term) in self.terms.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{term}")?;
        }
        Ok(())
    }
}

/// Read a dotted field path (`status.phase`) from a JSON object as a string (`""` if absent).
pub fn field_value(obj: &Value, path: &str) -> String {
    let mut cur = obj;
    for part in path.split('.') {
        match cur.get(part) {
            Some(v) => cur = v,
            None => return String::new(),
        }
    }
    match cur {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn equality_operators_match_as_the_api_does() {
        let l = labels(&[("app", "web"), ("tier", "front")]);
        assert!(LabelSelector::parse("app=web").unwrap().matches(&l));
        assert!(LabelSelector::parse("app==web").unwrap().matches(&l));
        assert!(!LabelSelector::parse("app!=web").unwrap().matches(&l));
        assert!(LabelSelector::parse("missing!=x").unwrap().matches(&l));
        assert!(!LabelSelector::parse("app=db").unwrap().matches(&l));
    }

    #[test]
    fn set_operators_and_existence_match() {
        let l = labels(&[("env", "prod")]);
        assert!(
            LabelSelector::parse("env in (prod, staging)")
                .unwrap()
                .matches(&l)
        );
        assert!(
            !LabelSelector::parse("env notin (prod)")
                .unwrap()
                .matches(&l)
        );
        assert!(
            LabelSelector::parse("other notin (prod)")
                .unwrap()
                .matches(&l)
        );
        assert!(LabelSelector::parse("env").unwrap().matches(&l));
        assert!(!LabelSelector::parse("!env").unwrap().matches(&l));
        assert!(LabelSelector::parse("!other").unwrap().matches(&l));
        assert!(!LabelSelector::parse("other").unwrap().matches(&l));
    }

    #[test]
    fn matches_with_reads_labels_through_a_lookup() {
        let sel = LabelSelector::parse("app=web,!canary").unwrap();
        assert!(sel.matches_with(|k| (k == "app").then_some("web")));
        assert!(!sel.matches_with(|k| (k == "canary").then_some("1")));
    }

    #[test]
    fn comma_means_and() {
        let l = labels(&[("a", "1"), ("b", "2")]);
        assert!(LabelSelector::parse("a=1,b=2").unwrap().matches(&l));
        assert!(!LabelSelector::parse("a=1,b=3").unwrap().matches(&l));
        assert!(
            LabelSelector::parse("a, !c, b in (2,3)")
                .unwrap()
                .matches(&l)
        );
    }

    #[test]
    fn numeric_comparisons_need_integer_labels() {
        let l = labels(&[("n", "5")]);
        assert!(LabelSelector::parse("n>4").unwrap().matches(&l));
        assert!(!LabelSelector::parse("n<4").unwrap().matches(&l));
        assert!(LabelSelector::parse("n>x").is_err());
    }

    #[test]
    fn empty_selector_matches_everything() {
        let sel = LabelSelector::parse("").unwrap();
        assert!(sel.is_empty());
        assert!(sel.matches(&labels(&[])));
    }

    #[test]
    fn prefixed_keys_are_accepted() {
        let l = labels(&[("app.kubernetes.io/name", "cart")]);
        assert!(
            LabelSelector::parse("app.kubernetes.io/name=cart")
                .unwrap()
                .matches(&l)
        );
    }

    #[test]
    fn malformed_selectors_are_rejected() {
        for bad in [
            "a=(",
            "a in b",
            "a in ()",
            "=b",
            "a=b=c",
            "a b",
            "a,",
            "bad key=1",
            "a=-x-",
            "Upper/x=1",
        ] {
            assert!(
                LabelSelector::parse(bad).is_err(),
                "{bad:?} should not parse"
            );
        }
    }

    #[test]
    fn field_selector_parses_all_operators_and_escapes() {
        let sel =
            FieldSelector::parse("metadata.name=a\\,b,metadata.namespace!=x,status.phase==Running")
                .unwrap();
        assert_eq!(sel.terms.len(), 3);
        assert_eq!(sel.terms[0].value, "a,b");
        assert_eq!(sel.terms[1].operator, FieldOperator::NotEquals);
        let obj = serde_json::json!({"metadata": {"name": "a,b", "namespace": "y"}, "status": {"phase": "Running"}});
        assert!(sel.matches(|f| field_value(&obj, f)));
        let obj2 = serde_json::json!({"metadata": {"name": "a,b", "namespace": "x"}});
        assert!(!sel.matches(|f| field_value(&obj2, f)));
    }

    #[test]
    fn field_selector_without_operator_is_rejected() {
        assert!(FieldSelector::parse("metadata.name").is_err());
        assert!(FieldSelector::parse("=x").is_err());
    }

    #[test]
    fn a_label_selector_displays_in_the_api_syntax_and_parses_back() {
        let text = "app==web, tier in (front,,back),!canary,env notin (dev),gen>3,n<10,x!=,ready";
        let sel = LabelSelector::parse(text).unwrap();
        let shown = sel.to_string();
        assert_eq!(
            shown,
            "app=web,tier in (front,,back),!canary,env notin (dev),gen>3,n<10,x!=,ready"
        );
        assert_eq!(LabelSelector::parse(&shown).unwrap(), sel);
        assert_eq!(LabelSelector::default().to_string(), "");
    }

    #[test]
    fn a_field_selector_displays_escaped_values_and_parses_back() {
        let sel =
            FieldSelector::parse("metadata.name==a\\,b\\=c\\\\,status.phase!=Running").unwrap();
        assert_eq!(sel.terms[0].value, "a,b=c\\");
        let shown = sel.to_string();
        assert_eq!(shown, "metadata.name=a\\,b\\=c\\\\,status.phase!=Running");
        assert_eq!(FieldSelector::parse(&shown).unwrap(), sel);
        assert_eq!(FieldSelector::default().to_string(), "");
    }

    #[test]
    fn a_field_term_splits_at_its_first_operator_as_the_api_server_splits_it() {
        // Found by the selectors fuzz target: "a=-==" was read as the field
        // "a=-" (the first "==" won over the earlier "="), which the API
        // server reads as the field "a" with an unescaped '=' in its value.
        let err = FieldSelector::parse("a=-==").unwrap_err();
        assert!(err.0.contains("escape '='"), "{err}");
        assert!(FieldSelector::parse("a=b!=c").is_err());
        let sel = FieldSelector::parse("a!=b\\=\\=c").unwrap();
        assert_eq!(
            (
                sel.terms[0].field.as_str(),
                sel.terms[0].operator,
                sel.terms[0].value.as_str()
            ),
            ("a", FieldOperator::NotEquals, "b==c")
        );
        let sel = FieldSelector::parse("a==b").unwrap();
        assert_eq!(sel.terms[0].operator, FieldOperator::Equals);
        assert_eq!(sel.terms[0].value, "b");
    }

    #[test]
    fn spaces_in_a_field_selector_belong_to_the_field_and_the_value() {
        let sel = FieldSelector::parse("metadata.name = web").unwrap();
        assert_eq!(sel.terms[0].field, "metadata.name ");
        assert_eq!(sel.terms[0].value, " web");
        let obj = serde_json::json!({"metadata": {"name": "web"}});
        assert!(!sel.matches(|f| field_value(&obj, f)));
    }
}
