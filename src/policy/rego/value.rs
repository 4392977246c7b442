//! The policy input document as regorus values, serialized straight from the Rust types.
//!
//! A call's input document used to become JSON text, which regorus then parsed back into its
//! own values: two passes over about 2 KB for a short bash call, a tenth of what the five
//! example policies cost on it (issue 12). [`RegoInput::of`] makes the values in one pass,
//! through the same `Serialize` implementations that print the document (`check --explain`),
//! so the two cannot drift apart; `serializing_is_parsing_the_json` holds it to the text route.
//!
//! The values are what regorus' JSON parser makes of the same text: `null` for `None`, unit
//! and non-finite numbers; a non-negative integer as an unsigned one; an enum's unit variant as
//! its name, other variants as `{"name": value}`; map keys as strings (numbers and booleans
//! written as text, as `serde_json` writes them; any other key is an error, and the call is
//! denied, as when the text could not be written).
//!
//! [`RegoInput::read_by`] converts only the fields the loaded modules can read (`reads.rs`): a
//! field no module names is not serialized at all, in a struct, a map or a variant alike (so
//! an error it would raise is not raised either; the gate's documents raise none: their maps
//! are JSON objects). The gate converts the document borrowed from its stages ([`InputRef`]),
//! which serializes as the owned [`PolicyInput`] that `check --explain` prints
//! (`the_gate_input_of_every_builtin_tool_and_a_bash_call_converts_as_its_text`).
//!
//! [`InputRef`]: crate::policy::input::InputRef
//! [`PolicyInput`]: crate::policy::input::PolicyInput

use std::cell::RefCell;
use std::collections::BTreeMap;

use regorus::Value;
use serde::ser::{self, Serialize};

use super::Rego;
use super::reads::{ALL, Reads};

/// A call's input document, ready for Rego. Opaque: regorus' types stay inside this module.
#[derive(Clone, Debug)]
pub struct RegoInput(pub(super) Value);

impl RegoInput {
    /// The whole document of any serializable value.
    pub fn of<T: Serialize + ?Sized>(document: &T) -> Result<RegoInput, String> {
        Self::converted(document, &ALL)
    }

    /// The document as these policies see it: only the fields their modules can read (the
    /// gate gives it the call's [`InputRef`]).
    pub fn read_by<T: Serialize + ?Sized>(document: &T, rego: &Rego) -> Result<RegoInput, String> {
        Self::converted(document, &rego.reads)
    }

    fn converted<T: Serialize + ?Sized>(document: &T, reads: &Reads) -> Result<RegoInput, String> {
        document
            .serialize(ToValue(reads))
            .map(RegoInput)
            .map_err(|e| format!("the input document does not convert: {}", e.0))
    }

    /// The document written as JSON text.
    pub fn from_json(text: &str) -> Result<RegoInput, String> {
        Value::from_json_str(text)
            .map(RegoInput)
            .map_err(|e| format!("the input document does not convert: {e}"))
    }
}

/// Why a value could not be made.
#[derive(Debug)]
pub(super) struct Error(String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl ser::Error for Error {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Error(msg.to_string())
    }
}

/// The serializer: each value becomes one regorus [`Value`], with the fields below it that
/// are read.
#[derive(Clone, Copy)]
struct ToValue<'r>(&'r Reads);

/// An integer as the JSON parser reads its text: unsigned when not negative.
fn integer(n: i64) -> Value {
    match u64::try_from(n) {
        Ok(u) => Value::from(u),
        Err(_) => Value::from(n),
    }
}

/// One `{"variant": value}` object.
fn tagged(variant: &'static str, value: Value) -> Value {
    let mut map = BTreeMap::new();
    map.insert(name(variant), value);
    Value::from(map)
}

/// A name the types themselves hold — a struct's field, an enum's variant — as a string
/// value: one per name and thread, shared by every document (a reference count, where a new
/// string for each of a bash document's hundred-odd field names and variants was a quarter of
/// its conversion). Names are `&'static str`, told apart by address and length; the same text
/// at two addresses is two entries of the same value.
fn name(text: &'static str) -> Value {
    thread_local! {
        static NAMES: RefCell<BTreeMap<(usize, usize), Value>> = const { RefCell::new(BTreeMap::new()) };
    }
    NAMES.with(|names| {
        names
            .borrow_mut()
            .entry((text.as_ptr() as usize, text.len()))
            .or_insert_with(|| Value::from(text))
            .clone()
    })
}

impl<'r> ser::Serializer for ToValue<'r> {
    type Ok = Value;
    type Error = Error;
    type SerializeSeq = Seq<'r>;
    type SerializeTuple = Seq<'r>;
    type SerializeTupleStruct = Seq<'r>;
    type SerializeTupleVariant = Variant<Seq<'r>>;
    type SerializeMap = Map<'r>;
    type SerializeStruct = Map<'r>;
    type SerializeStructVariant = Variant<Map<'r>>;

    fn serialize_bool(self, v: bool) -> Result<Value, Error> {
        Ok(Value::from(v))
    }
    fn serialize_i8(self, v: i8) -> Result<Value, Error> {
        Ok(integer(v.into()))
    }
    fn serialize_i16(self, v: i16) -> Result<Value, Error> {
        Ok(integer(v.into()))
    }
    fn serialize_i32(self, v: i32) -> Result<Value, Error> {
        Ok(integer(v.into()))
    }
    fn serialize_i64(self, v: i64) -> Result<Value, Error> {
        Ok(integer(v))
    }
    fn serialize_i128(self, v: i128) -> Result<Value, Error> {
        Ok(match u128::try_from(v) {
            Ok(u) => Value::from(u),
            Err(_) => Value::from(v),
        })
    }
    fn serialize_u8(self, v: u8) -> Result<Value, Error> {
        Ok(Value::from(u64::from(v)))
    }
    fn serialize_u16(self, v: u16) -> Result<Value, Error> {
        Ok(Value::from(u64::from(v)))
    }
    fn serialize_u32(self, v: u32) -> Result<Value, Error> {
        Ok(Value::from(u64::from(v)))
    }
    fn serialize_u64(self, v: u64) -> Result<Value, Error> {
        Ok(Value::from(v))
    }
    fn serialize_u128(self, v: u128) -> Result<Value, Error> {
        Ok(Value::from(v))
    }
    fn serialize_f32(self, v: f32) -> Result<Value, Error> {
        // As its shortest text reads back (`0.1`, not 0.100000001490116).
        self.serialize_f64(v.to_string().parse::<f64>().unwrap_or(f64::NAN))
    }
    fn serialize_f64(self, v: f64) -> Result<Value, Error> {
        // Not finite: `null`, as serde_json writes it.
        Ok(Value::from(v))
    }
    fn serialize_char(self, v: char) -> Result<Value, Error> {
        Ok(Value::from(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<Value, Error> {
        Ok(Value::from(v))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Value, Error> {
        Ok(Value::from(
            v.iter()
                .map(|&b| Value::from(u64::from(b)))
                .collect::<Vec<_>>(),
        ))
    }
    fn serialize_none(self) -> Result<Value, Error> {
        Ok(Value::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Value, Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Value, Error> {
        Ok(Value::Null)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<Value, Error> {
        Ok(Value::Null)
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<Value, Error> {
        Ok(name(variant))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<Value, Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Value, Error> {
        // `{"variant": value}`: the variant is a field like any other.
        Ok(match self.0.field(variant) {
            Some(reads) => tagged(variant, value.serialize(ToValue(reads))?),
            None => Value::new_object(),
        })
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Seq<'r>, Error> {
        Ok(Seq {
            reads: self.0,
            items: Vec::with_capacity(len.unwrap_or(0)),
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq<'r>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Seq<'r>, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Variant<Seq<'r>>, Error> {
        let seq = self.0.field(variant).map(|reads| Seq {
            reads,
            items: Vec::with_capacity(len),
        });
        Ok(Variant(variant, seq))
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Map<'r>, Error> {
        Ok(Map::new(self.0))
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Map<'r>, Error> {
        Ok(Map::new(self.0))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Variant<Map<'r>>, Error> {
        let reads = self.0.field(variant);
        Ok(Variant(variant, reads.map(Map::new)))
    }
}

/// An array being made; each item with what is read below the array.
struct Seq<'r> {
    reads: &'r Reads,
    items: Vec<Value>,
}

impl Seq<'_> {
    fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.items.push(value.serialize(ToValue(self.reads))?);
        Ok(())
    }
}

impl ser::SerializeSeq for Seq<'_> {
    type Ok = Value;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Value::from(self.items))
    }
}

impl ser::SerializeTuple for Seq<'_> {
    type Ok = Value;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Value::from(self.items))
    }
}

impl ser::SerializeTupleStruct for Seq<'_> {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Value::from(self.items))
    }
}

/// An object being made, with only the fields that are read. Keys are strings, as in JSON; a
/// later key replaces an earlier one, as regorus' parser does.
struct Map<'r> {
    reads: &'r Reads,
    entries: BTreeMap<Value, Value>,
    /// The key waiting for its value, and what is read below it; `None` after a key that is
    /// not read (its value is skipped).
    key: Option<(Value, &'r Reads)>,
    /// Whether a key came and its value has not.
    keyed: bool,
}

impl<'r> Map<'r> {
    fn new(reads: &'r Reads) -> Map<'r> {
        Map {
            reads,
            entries: BTreeMap::new(),
            key: None,
            keyed: false,
        }
    }
}

/// A map key as JSON text writes it: a string, or a number or boolean as text.
fn key_of(value: Value) -> Result<Value, Error> {
    match value {
        Value::String(_) => Ok(value),
        Value::Number(_) | Value::Bool(_) => value
            .to_json_str()
            .map(Value::from)
            .map_err(|e| Error(e.to_string())),
        other => Err(Error(format!("a map key must be a string, not {other:?}"))),
    }
}

impl ser::SerializeMap for Map<'_> {
    type Ok = Value;
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        let key = key_of(key.serialize(ToValue(&ALL))?)?;
        let reads = match &key {
            Value::String(name) => self.reads.field(name),
            _ => None,
        };
        self.key = reads.map(|reads| (key, reads));
        self.keyed = true;
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        if !std::mem::take(&mut self.keyed) {
            return Err(Error("a map value came before its key".into()));
        }
        if let Some((key, reads)) = self.key.take() {
            self.entries.insert(key, value.serialize(ToValue(reads))?);
        }
        Ok(())
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Value::from(self.entries))
    }
}

impl ser::SerializeStruct for Map<'_> {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        if let Some(reads) = self.reads.field(key) {
            self.entries
                .insert(name(key), value.serialize(ToValue(reads))?);
        }
        Ok(())
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Value::from(self.entries))
    }
}

/// A tuple or struct variant being made: `{"variant": [...]}` or `{"variant": {...}}`; `None`
/// when the variant is not read (its fields are skipped, and it is `{}`).
struct Variant<T>(&'static str, Option<T>);

impl ser::SerializeTupleVariant for Variant<Seq<'_>> {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        match &mut self.1 {
            Some(seq) => seq.push(value),
            None => Ok(()),
        }
    }
    fn end(self) -> Result<Value, Error> {
        Ok(match self.1 {
            Some(seq) => tagged(self.0, Value::from(seq.items)),
            None => Value::new_object(),
        })
    }
}

impl ser::SerializeStructVariant for Variant<Map<'_>> {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        match &mut self.1 {
            Some(map) => ser::SerializeStruct::serialize_field(map, key, value),
            None => Ok(()),
        }
    }
    fn end(self) -> Result<Value, Error> {
        Ok(match self.1 {
            Some(map) => tagged(self.0, Value::from(map.entries)),
            None => Value::new_object(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::input::InputRef;
    use serde::Serialize;
    use serde_json::json;

    /// The text route: what regorus' JSON parser makes of serde_json's text.
    fn parsed<T: Serialize>(v: &T) -> Value {
        Value::from_json_str(&serde_json::to_string(v).unwrap()).unwrap()
    }

    #[derive(Serialize)]
    #[serde(rename_all = "snake_case")]
    enum E {
        Unit,
        Newtype(u8),
        Tuple(i32, String),
        Struct { a: Option<bool>, b: f64 },
    }

    #[derive(Serialize)]
    struct S {
        name: String,
        #[serde(rename = "static")]
        fixed: bool,
        small: i32,
        negative: i64,
        big: u64,
        float: f64,
        nan: f64,
        tiny: f32,
        none: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        skipped: Option<u8>,
        unit: (),
        list: Vec<E>,
        map: BTreeMap<u32, bool>,
        bools: BTreeMap<bool, &'static str>,
        json: serde_json::Value,
        ch: char,
    }

    #[test]
    fn serializing_is_parsing_the_json() {
        let s = S {
            name: "n\u{1F600}\"x\\".into(),
            fixed: true,
            small: 5,
            negative: -7,
            big: u64::MAX,
            float: 1.0,
            nan: f64::NAN,
            tiny: 0.1,
            none: None,
            skipped: None,
            unit: (),
            list: vec![
                E::Unit,
                E::Newtype(3),
                E::Tuple(-1, "t".into()),
                E::Struct { a: None, b: 2.5 },
            ],
            map: BTreeMap::from([(1, true), (20, false)]),
            bools: BTreeMap::from([(true, "yes")]),
            json: json!({"k": [1, -2, 3.5, null, {"z": "q"}], "empty": {}, "e": []}),
            ch: 'é',
        };
        assert_eq!(RegoInput::of(&s).unwrap().0, parsed(&s));
    }

    #[test]
    fn the_gate_input_of_every_builtin_tool_and_a_bash_call_converts_as_its_text() {
        use crate::{Gate, HostFiles, PolicySet, Registry};
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), "x").unwrap();
        let policy = PolicySet::embedded_default();
        let gate = Gate::builder(Registry::with_builtins(), &policy, dir.path())
            .explain(true)
            .host_files(HostFiles::for_workspace(dir.path()))
            .build()
            .unwrap();
        for call in [
            r#"{"name":"read_file","arguments":{"path":"a","offset":2,"limit":3}}"#,
            r#"{"name":"read_file","arguments":{"path":"../../../etc/passwd"}}"#,
            r#"{"name":"write_file","arguments":{"path":"b","content":"x"}}"#,
            r#"{"name":"edit_file","arguments":{"path":"a","old_string":"x","new_string":"y","replace_all":true}}"#,
            r#"{"name":"move_file","arguments":{"source_path":"a","destination_path":"c/d"}}"#,
            r#"{"name":"delete_file","arguments":{"path":"a"}}"#,
            r#"{"name":"list_dir","arguments":{"path":"."}}"#,
            r#"{"name":"glob","arguments":{"pattern":"*.rs"}}"#,
            r#"{"name":"grep","arguments":{"pattern":"x","glob":"*"}}"#,
            r#"{"name":"bash","arguments":{"command":"X=1 git -C . diff $(cat a) | sort > out 2>&1; eval \"$Y\"","timeout_ms":500}}"#,
        ] {
            let judged = gate.admit_text(call);
            let input = judged.admission().input.as_ref().expect("explained");
            assert_eq!(RegoInput::of(input).unwrap().0, parsed(input), "{call}");
            // The borrowed document the gate converts for Rego is the owned one.
            let effects = input.effects.iter().copied().collect();
            let borrowed = InputRef {
                tool: &input.tool,
                arguments: &input.arguments,
                target: &input.target,
                effects: &effects,
                paths: &input.paths,
                bash: input.bash.as_ref(),
                session: &input.session,
            };
            assert_eq!(RegoInput::of(&borrowed).unwrap().0, parsed(input), "{call}");
            assert_eq!(&borrowed.owned(), input, "{call}");
        }
    }

    /// A document with every part the gate's has, nested objects and arrays of objects.
    fn document() -> serde_json::Value {
        json!({
            "tool": "bash",
            "arguments": {"command": "git push fork", "timeout_ms": 5},
            "target": {"tool": "bash", "source": "builtin", "via": null},
            "effects": ["exec", "network"],
            "paths": [{"written": "a", "size": 3}, {"written": "b", "size": null}],
            "bash": {
                "analysed": true,
                "commands": [{"argv": ["git", "push", "fork"], "wrapper": false}],
                "features": ["pipeline"],
                "hazards": [],
            },
            "session": {"workspace": "/w", "mode": "normal", "roots": [{"path": "/w"}]},
        })
    }

    /// The document `read_by` makes for these modules.
    fn read_by(modules: &[(&str, &str)]) -> Value {
        let rego = super::super::load_texts(modules).unwrap().unwrap();
        RegoInput::read_by(&document(), &rego).unwrap().0
    }

    /// The legitimate use: a policy gets every part it names, however it names it (a path, a
    /// literal index, a helper in another package, a head, a `with`, an import), and nothing
    /// it does not — with the same votes as on the whole document.
    #[test]
    fn a_policy_gets_the_parts_it_reads() {
        let modules = [
            (
                "p.rego",
                "package reasonix.p\nimport rego.v1\nimport data.lib\nimport input.session as s\n\
                 deny contains c.argv[2] if { some c in input.bash.commands; c.argv[1] == \"push\"; lib.big }\n\
                 ask contains \"net\" if input[\"effects\"][_] == \"network\"\n\
                 names[input.arguments.command] := 1\n\
                 allow contains s.workspace if { input.bash.analysed with input.tool as \"x\" }\n",
            ),
            (
                "lib.rego",
                "package lib\nimport rego.v1\nbig if { some p in input.paths; p.size > 2 }\n",
            ),
        ];
        let want = json!({
            "tool": "bash",
            "arguments": {"command": "git push fork"},
            "effects": ["exec", "network"],
            "paths": [{"written": "a", "size": 3}, {"written": "b", "size": null}],
            "bash": {
                "analysed": true,
                "commands": [{"argv": ["git", "push", "fork"], "wrapper": false}],
            },
            "session": {"workspace": "/w", "mode": "normal", "roots": [{"path": "/w"}]},
        });
        assert_eq!(read_by(&modules), parsed(&want));
        let rego = super::super::load_texts(&modules).unwrap().unwrap();
        let votes = rego.votes_on(&RegoInput::read_by(&document(), &rego).unwrap());
        let whole = rego.votes_on(&RegoInput::of(&document()).unwrap());
        assert_eq!(votes, whole);
        assert_eq!(votes.unwrap().len(), 3);

        // One field of an object; `tool` always; nothing else.
        let one = read_by(&[(
            "w.rego",
            "package reasonix\nimport rego.v1\nask contains \"w\" if input.session.workspace == \"/w\"\n",
        )]);
        assert_eq!(
            one,
            parsed(&json!({"tool": "bash", "session": {"workspace": "/w"}}))
        );
        // A part read only in a rule's head, an `else` or a default value.
        for text in [
            "package reasonix\nimport rego.v1\nx[input.target.tool] := 1\n",
            "package reasonix\nimport rego.v1\nx := 1 if false else := input.target.tool\n",
            "package reasonix\nimport rego.v1\ndefault x := input.target.tool\n",
        ] {
            let got = read_by(&[("h.rego", text)]);
            assert_eq!(
                got,
                parsed(&json!({"tool": "bash", "target": {"tool": "bash"}})),
                "{text}"
            );
        }
    }

    /// The refused shortcut: a module that reaches `input` (or a part of it) other than by
    /// naming a field gets all of it — the whole document, or the whole part.
    #[test]
    fn dynamic_access_gets_the_whole_document() {
        let whole = parsed(&document());
        for body in [
            "deny contains \"w\" if walk(input, [_, \"fork\"])",
            "deny contains json.marshal(input) if true",
            "deny contains k if { some k, _ in input }",
            "deny contains \"k\" if { some k; input[k].tool == \"bash\" }",
            "deny contains \"o\" if object.get(input, [\"bash\", \"hazards\"], 1) == []",
            "deny contains \"c\" if count(input) > 3",
            "deny contains \"x\" if { f(input) }\nf(d) if d.paths",
            "deny contains \"x\" if { x := input; x.paths }",
            "deny contains \"p\" if { print(input); false }",
            "deny contains \"e\" if { every k, v in input { k != v } }",
            "deny contains \"x\" if { input.bash.analysed with input as {} }",
        ] {
            let text = format!("package reasonix\nimport rego.v1\n{body}\n");
            assert_eq!(read_by(&[("d.rego", &text)]), whole, "{body}");
        }
        assert_eq!(
            read_by(&[(
                "i.rego",
                "package reasonix\nimport rego.v1\nimport input\ndeny contains \"i\" if input.x\n"
            )]),
            whole
        );
        // The same for a part: all of `bash`, nothing else.
        for body in [
            "deny contains k if { some k, _ in input.bash }",
            "deny contains \"k\" if count(object.keys(input.bash)) > 9",
            "deny contains \"k\" if { some k; input.bash[k] == [] }",
            "deny contains \"j\" if json.marshal(input[\"bash\"]) == \"\"",
        ] {
            let text = format!("package reasonix\nimport rego.v1\n{body}\n");
            let want = json!({"tool": "bash", "bash": document()["bash"].clone()});
            assert_eq!(read_by(&[("b.rego", &text)]), parsed(&want), "{body}");
        }
    }

    #[test]
    fn a_key_that_is_not_text_is_an_error() {
        let m = BTreeMap::from([(vec![1u8], 1u8)]);
        assert!(RegoInput::of(&m).is_err());
    }
}
