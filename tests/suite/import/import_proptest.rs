//! Property tests of session-file import: a real document broken at a random place in a random
//! way is either rejected — with a JSON path, nothing written — or, when the change happens to
//! be harmless, imported and exported back to the same document. Never a panic, never half a
//! session.

use crate::support::Env;
use neocode::session::file::{self, SessionFile};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Real documents: the shipped demo sessions (plans, tool calls, assets, a fork).
fn seeds() -> Vec<Value> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo");
    let mut out: Vec<Value> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .map(|e| serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap())
        .collect();
    out.sort_by_key(|v| v["session"]["id"].as_str().unwrap_or_default().to_string());
    assert!(
        out.len() >= 3,
        "demo documents missing in {}",
        dir.display()
    );
    out
}

/// Every location in a JSON tree, as a list of steps.
#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

fn locations(v: &Value, here: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    out.push(here.clone());
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                here.push(Step::Key(k.clone()));
                locations(c, here, out);
                here.pop();
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                here.push(Step::Index(i));
                locations(c, here, out);
                here.pop();
            }
        }
        _ => {}
    }
}

fn at<'a>(v: &'a mut Value, path: &[Step]) -> &'a mut Value {
    path.iter().fold(v, |v, s| match s {
        Step::Key(k) => &mut v[k.as_str()],
        Step::Index(i) => &mut v[*i],
    })
}

/// One way to break a document.
#[derive(Debug, Clone)]
enum Mutation {
    /// Replace the value at a location with something of another type or a hostile string.
    Replace(usize, Value),
    /// Remove a key from the object at a location (or an element from an array).
    Remove(usize, usize),
    /// Duplicate an array element in place (duplicate seqs, assets, steps, calls).
    Duplicate(usize, usize),
    /// Cut the serialised document short.
    Truncate(usize),
}

fn hostile_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        Just(json!(-1)),
        Just(json!(0)),
        Just(json!(1.5)),
        Just(json!(u64::MAX)),
        Just(json!(true)),
        Just(json!([])),
        Just(json!({})),
        Just(json!("")),
        Just(json!("../../etc/passwd")),
        Just(json!("robot")),
        Just(json!("not-a-time")),
        Just(json!("\u{1b}]0;title\u{7}")),
        Just(json!("!!!not base64!!!")),
        "[a-z0-9_-]{1,12}".prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
    ]
}

fn mutation() -> impl Strategy<Value = (usize, Vec<Mutation>)> {
    let one = prop_oneof![
        (any::<usize>(), hostile_value()).prop_map(|(l, v)| Mutation::Replace(l, v)),
        (any::<usize>(), any::<usize>()).prop_map(|(l, k)| Mutation::Remove(l, k)),
        (any::<usize>(), any::<usize>()).prop_map(|(l, k)| Mutation::Duplicate(l, k)),
        any::<usize>().prop_map(Mutation::Truncate),
    ];
    (any::<usize>(), prop::collection::vec(one, 1..4))
}

/// Applies the mutations; returns the document's text.
fn apply(mut doc: Value, muts: &[Mutation]) -> String {
    let mut truncate = None;
    for m in muts {
        let mut locs = Vec::new();
        locations(&doc, &mut Vec::new(), &mut locs);
        match m {
            Mutation::Replace(l, v) => *at(&mut doc, &locs[l % locs.len()]) = v.clone(),
            Mutation::Remove(l, k) => match at(&mut doc, &locs[l % locs.len()]) {
                Value::Object(o) if !o.is_empty() => {
                    let key = o.keys().nth(k % o.len()).unwrap().clone();
                    o.remove(&key);
                }
                Value::Array(a) if !a.is_empty() => {
                    a.remove(k % a.len());
                }
                _ => {}
            },
            Mutation::Duplicate(l, k) => {
                if let Value::Array(a) = at(&mut doc, &locs[l % locs.len()])
                    && !a.is_empty()
                {
                    let i = k % a.len();
                    let copy = a[i].clone();
                    a.insert(i, copy);
                }
            }
            Mutation::Truncate(n) => truncate = Some(*n),
        }
    }
    let text = doc.to_string();
    match truncate {
        Some(n) => {
            let mut cut = n % text.len().max(1);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text[..cut].to_string()
        }
        None => text,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn broken_documents_are_rejected_whole_or_imported_losslessly((seed, muts) in mutation()) {
        let seeds = seeds();
        let text = apply(seeds[seed % seeds.len()].clone(), &muts);
        let t = Env::new();
        let store = t.store();
        match file::parse(&text) {
            Err(e) => {
                prop_assert!(e.path.starts_with('$'), "path {:?}", e.path);
                prop_assert!(!e.message.is_empty());
                // The typed document may still deserialise; import must refuse it too.
                if let Ok(raw) = serde_json::from_str::<SessionFile>(&text) {
                    prop_assert!(file::import(&store, &raw, true).is_err());
                }
                prop_assert_eq!(store.count().unwrap(), 0);
                let assets: Vec<_> = std::fs::read_dir(store.paths().assets()).unwrap().collect();
                prop_assert!(assets.is_empty(), "asset files left behind");
            }
            Ok(doc) => {
                // Harmless change: the document imports and comes back the same.
                match file::import(&store, &doc, false) {
                    Ok(h) => {
                        let back = file::export(&store, &h.id).unwrap();
                        let again = file::parse(&serde_json::to_string(&back).unwrap()).unwrap();
                        prop_assert_eq!(&back, &again);
                        prop_assert_eq!(back.messages.len(), doc.messages.len());
                        prop_assert_eq!(back.assets.len(), doc.assets.len());
                        prop_assert_eq!(store.count().unwrap(), 1);
                    }
                    Err(e) => {
                        // A store-level refusal (e.g. an asset over the size limit) writes nothing.
                        prop_assert_eq!(store.count().unwrap(), 0, "half-imported after {}", e);
                    }
                }
            }
        }
    }
}
