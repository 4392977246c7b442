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

use std::collections::BTreeMap;

use regorus::Value;
use serde::ser::{self, Serialize};

/// A call's input document, ready for Rego. Opaque: regorus' types stay inside this module.
#[derive(Clone, Debug)]
pub struct RegoInput(pub(super) Value);

impl RegoInput {
    /// The document of any serializable value (the gate gives it a [`PolicyInput`]).
    ///
    /// [`PolicyInput`]: crate::policy::input::PolicyInput
    pub fn of<T: Serialize + ?Sized>(document: &T) -> Result<RegoInput, String> {
        document
            .serialize(ToValue)
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

/// The serializer: each value becomes one regorus [`Value`].
struct ToValue;

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
    map.insert(Value::from(variant), value);
    Value::from(map)
}

impl ser::Serializer for ToValue {
    type Ok = Value;
    type Error = Error;
    type SerializeSeq = Seq;
    type SerializeTuple = Seq;
    type SerializeTupleStruct = Seq;
    type SerializeTupleVariant = Variant<Seq>;
    type SerializeMap = Map;
    type SerializeStruct = Map;
    type SerializeStructVariant = Variant<Map>;

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
        Ok(Value::from(variant))
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
        Ok(tagged(variant, value.serialize(ToValue)?))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Seq, Error> {
        Ok(Seq(Vec::with_capacity(len.unwrap_or(0))))
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Seq, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Variant<Seq>, Error> {
        Ok(Variant(variant, Seq(Vec::with_capacity(len))))
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Map, Error> {
        Ok(Map::default())
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Map, Error> {
        Ok(Map::default())
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Variant<Map>, Error> {
        Ok(Variant(variant, Map::default()))
    }
}

/// An array being made.
struct Seq(Vec<Value>);

impl Seq {
    fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.0.push(value.serialize(ToValue)?);
        Ok(())
    }
}

impl ser::SerializeSeq for Seq {
    type Ok = Value;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Value::from(self.0))
    }
}

impl ser::SerializeTuple for Seq {
    type Ok = Value;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Value::from(self.0))
    }
}

impl ser::SerializeTupleStruct for Seq {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Value::from(self.0))
    }
}

/// An object being made. Keys are strings, as in JSON; a later key replaces an earlier one, as
/// regorus' parser does.
#[derive(Default)]
struct Map {
    entries: BTreeMap<Value, Value>,
    key: Option<Value>,
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

impl ser::SerializeMap for Map {
    type Ok = Value;
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.key = Some(key_of(key.serialize(ToValue)?)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let key = self
            .key
            .take()
            .ok_or_else(|| Error("a map value came before its key".into()))?;
        self.entries.insert(key, value.serialize(ToValue)?);
        Ok(())
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Value::from(self.entries))
    }
}

impl ser::SerializeStruct for Map {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.entries
            .insert(Value::from(key), value.serialize(ToValue)?);
        Ok(())
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Value::from(self.entries))
    }
}

/// A tuple or struct variant being made: `{"variant": [...]}` or `{"variant": {...}}`.
struct Variant<T>(&'static str, T);

impl ser::SerializeTupleVariant for Variant<Seq> {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.1.push(value)
    }
    fn end(self) -> Result<Value, Error> {
        Ok(tagged(self.0, Value::from(self.1.0)))
    }
}

impl ser::SerializeStructVariant for Variant<Map> {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        ser::SerializeStruct::serialize_field(&mut self.1, key, value)
    }
    fn end(self) -> Result<Value, Error> {
        Ok(tagged(self.0, Value::from(self.1.entries)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        }
    }

    #[test]
    fn a_key_that_is_not_text_is_an_error() {
        let m = BTreeMap::from([(vec![1u8], 1u8)]);
        assert!(RegoInput::of(&m).is_err());
    }
}
