//! Label and field selectors: [`LabelSelector::parse`] and
//! [`FieldSelector::parse`] on any text, and matching on label and field
//! values built with `arbitrary` around what the selector asks for.
//!
//! The input's first line is the selector text (both parsers read it); the
//! bytes after it feed [`Unstructured`] to pick the labels and fields.
//!
//! - Neither parser panics, and a refusal is one line.
//! - A parsed selector, displayed, parses back to an equal selector.
//! - Matching agrees with itself: the three label entry points
//!   (`matches`, `matches_with`, `matches_json`) give one answer, which is
//!   the AND of the requirements taken one at a time; and a requirement and
//!   its negation (`=`/`!=`, `in`/`notin`, exists/`!`) never agree.

use arbitrary::Unstructured;
use herald_grammar::selector::{
    FieldOperator, FieldSelector, FieldTerm, LabelSelector, Operator, Requirement, SelectorError,
};
use std::collections::BTreeMap;

/// Parses the first line of `data` (if UTF-8) as a label and a field
/// selector and matches what parses against values drawn from the rest.
pub fn check(data: &[u8]) {
    let (line, rest) = match data.iter().position(|b| *b == b'\n') {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[][..]),
    };
    let Ok(text) = std::str::from_utf8(line) else {
        return;
    };
    match LabelSelector::parse(text) {
        Ok(selector) => check_label_selector(text, &selector, &mut Unstructured::new(rest)),
        Err(err) => check_error(text, &err),
    }
    match FieldSelector::parse(text) {
        Ok(selector) => check_field_selector(text, &selector, &mut Unstructured::new(rest)),
        Err(err) => check_error(text, &err),
    }
}

fn check_error(text: &str, err: &SelectorError) {
    assert!(
        super::is_one_line(&err.to_string()),
        "{text:?}: the error is not one line: {err:?}"
    );
}

fn check_label_selector(text: &str, selector: &LabelSelector, u: &mut Unstructured<'_>) {
    let shown = selector.to_string();
    match LabelSelector::parse(&shown) {
        Ok(again) => assert_eq!(
            &again, selector,
            "{text:?} is displayed as {shown:?}, which parses to another selector"
        ),
        Err(err) => panic!("{text:?} is displayed as {shown:?}, which does not parse: {err}"),
    }

    let labels = labels_for(selector, u);
    let verdict = selector.matches(&labels);
    let looked_up = selector.matches_with(|key| labels.get(key).map(String::as_str));
    let json: serde_json::Map<String, serde_json::Value> = labels
        .iter()
        .map(|(key, value)| (key.clone(), value.clone().into()))
        .collect();
    let from_json = selector.matches_json(Some(&json));
    assert!(
        looked_up == verdict && from_json == verdict,
        "{text:?} on {labels:?}: matches {verdict}, matches_with {looked_up}, matches_json {from_json}"
    );

    let alone = |requirement: &Requirement| LabelSelector {
        requirements: vec![requirement.clone()],
    };
    let every = selector
        .requirements
        .iter()
        .all(|requirement| alone(requirement).matches(&labels));
    assert_eq!(
        every, verdict,
        "{text:?} on {labels:?}: not the AND of its requirements"
    );
    for requirement in &selector.requirements {
        let Some(negated) = negation(requirement.operator) else {
            continue;
        };
        let negation = Requirement {
            operator: negated,
            ..requirement.clone()
        };
        assert_ne!(
            alone(requirement).matches(&labels),
            alone(&negation).matches(&labels),
            "{text:?} on {labels:?}: {requirement} and {negation} agree"
        );
    }
}

/// The operator selecting exactly the label sets `operator` does not.
/// `>` and `<` have none: a missing or non-integer label fails both.
fn negation(operator: Operator) -> Option<Operator> {
    Some(match operator {
        Operator::Equals => Operator::NotEquals,
        Operator::NotEquals => Operator::Equals,
        Operator::In => Operator::NotIn,
        Operator::NotIn => Operator::In,
        Operator::Exists => Operator::DoesNotExist,
        Operator::DoesNotExist => Operator::Exists,
        Operator::GreaterThan | Operator::LessThan => return None,
    })
}

/// Labels around the selector's keys: each key absent, or set to one of the
/// requirement's values, a neighbouring integer, or anything; plus a few
/// arbitrary labels.
fn labels_for(selector: &LabelSelector, u: &mut Unstructured<'_>) -> BTreeMap<String, String> {
    let mut labels: BTreeMap<String, String> = u.arbitrary().unwrap_or_default();
    for requirement in &selector.requirements {
        match value_near(&requirement.values, u) {
            Some(value) => labels.insert(requirement.key.clone(), value),
            None => labels.remove(&requirement.key),
        };
    }
    labels
}

/// A value for a label or field compared with `values`: none, one of them,
/// one of them plus or minus one if it is an integer, or anything.
fn value_near(values: &[String], u: &mut Unstructured<'_>) -> Option<String> {
    let pick = |u: &mut Unstructured<'_>| -> Option<&String> {
        let index = u.choose_index(values.len()).ok()?;
        values.get(index)
    };
    match u.int_in_range(0..=3u8).unwrap_or(0) {
        0 => None,
        1 => Some(pick(u).cloned().unwrap_or_default()),
        2 => {
            let base: i64 = pick(u).and_then(|v| v.parse().ok()).unwrap_or(0);
            let step: i64 = u.int_in_range(-1..=1).unwrap_or(0);
            Some(base.saturating_add(step).to_string())
        }
        _ => Some(u.arbitrary().unwrap_or_default()),
    }
}

fn check_field_selector(text: &str, selector: &FieldSelector, u: &mut Unstructured<'_>) {
    let shown = selector.to_string();
    match FieldSelector::parse(&shown) {
        Ok(again) => assert_eq!(
            &again, selector,
            "{text:?} is displayed as {shown:?}, which parses to another selector"
        ),
        Err(err) => panic!("{text:?} is displayed as {shown:?}, which does not parse: {err}"),
    }

    let mut fields: BTreeMap<String, String> = BTreeMap::new();
    for term in &selector.terms {
        if let Some(value) = value_near(std::slice::from_ref(&term.value), u) {
            fields.insert(term.field.clone(), value);
        }
    }
    // Absent fields read as "", as the API server reads them.
    let get = |field: &str| fields.get(field).cloned().unwrap_or_default();
    let verdict = selector.matches(get);
    let alone = |term: &FieldTerm| FieldSelector {
        terms: vec![term.clone()],
    };
    let every = selector.terms.iter().all(|term| alone(term).matches(get));
    assert_eq!(
        every, verdict,
        "{text:?} on {fields:?}: not the AND of its terms"
    );
    for term in &selector.terms {
        let negation = FieldTerm {
            operator: match term.operator {
                FieldOperator::Equals => FieldOperator::NotEquals,
                FieldOperator::NotEquals => FieldOperator::Equals,
            },
            ..term.clone()
        };
        assert_ne!(
            alone(term).matches(get),
            alone(&negation).matches(get),
            "{text:?} on {fields:?}: {term} and {negation} agree"
        );
    }
}
