//! Weather Factory's `config.json`: an object of option name to
//! `{"value", "min_value", "max_value", "step"}`, read in the file's order
//! (`step` is taken as `c_end`, `r_end` is fishtest's 0.002).

use std::fmt;

use anyhow::{bail, Context, Result};
use serde::{
    de::{MapAccess, Visitor},
    Deserialize, Deserializer,
};

use super::{check, Entry, Format};
use crate::tune::spsa::R_END;

/// A JSON object's members in the order of the file (serde_json's map
/// would sort them), duplicates kept for [`super::parse`] to refuse.
struct Ordered(Vec<(String, serde_json::Value)>);

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Ordered, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object: option name to {value, min_value, max_value, step}")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Ordered, A::Error> {
                let mut v = Vec::new();
                while let Some(kv) = map.next_entry::<String, serde_json::Value>()? {
                    v.push(kv);
                }
                Ok(Ordered(v))
            }
        }
        d.deserialize_map(V)
    }
}

/// One option of Weather Factory's `config.json` (its `Param`: exactly
/// these four fields).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WfParam {
    value: f64,
    min_value: f64,
    max_value: f64,
    step: f64,
}

/// The entries of a `config.json`, in file order, each checked.
pub fn read(text: &str) -> Result<Vec<Entry>> {
    let Ordered(members) = serde_json::from_str(text).with_context(|| {
        format!(
            "not Weather Factory's JSON ({})",
            Format::WeatherFactory.layout()
        )
    })?;
    let mut out = Vec::new();
    for (name, value) in members {
        let p: WfParam = serde_json::from_value(value).with_context(|| {
            format!("{name:?}: expected {{\"value\", \"min_value\", \"max_value\", \"step\"}}")
        })?;
        if name.trim().is_empty() {
            bail!("an option's name is empty");
        }
        let finite = [p.value, p.min_value, p.max_value, p.step]
            .iter()
            .all(|x| x.is_finite());
        if !finite {
            bail!("{name:?}: every number must be finite");
        }
        let e = Entry {
            line: 0,
            name,
            float: false,
            start: p.value,
            min: p.min_value,
            max: p.max_value,
            c_end: p.step,
            r_end: R_END,
        };
        check(&e)?;
        out.push(e);
    }
    Ok(out)
}

/// `entries` as a `config.json`, in their order.
pub fn write(entries: &[Entry]) -> String {
    let mut s = String::from("{\n");
    for (i, e) in entries.iter().enumerate() {
        let name = serde_json::Value::String(e.name.clone());
        s.push_str(&format!(
            "    {name}: {{\n        \"value\": {},\n        \"min_value\": {},\n        \
             \"max_value\": {},\n        \"step\": {}\n    }}{}\n",
            e.start,
            e.min,
            e.max,
            e.c_end,
            if i + 1 < entries.len() { "," } else { "" }
        ));
    }
    s.push_str("}\n");
    s
}
