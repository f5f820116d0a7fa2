//! The protobuf wire format, read without a schema: tags, varints,
//! fixed-width numbers and length-delimited bytes.

use super::TranscodeError;

/// One field's value as it sits on the wire.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WireValue<'a> {
    /// Wire type 0: ints, enums, bools.
    Varint(u64),
    /// Wire type 1: doubles and fixed 64-bit ints.
    Fixed64(u64),
    /// Wire type 2: strings, bytes, embedded messages, packed repeats.
    Bytes(&'a [u8]),
    /// Wire type 5: floats and fixed 32-bit ints.
    Fixed32(u32),
}

/// Reads the fields of one message in the order they were written.
pub struct Fields<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Fields<'a> {
    /// The fields of the message encoded in `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Fields { bytes, at: 0 }
    }

    /// The next field's number and value, `None` at the end.
    pub fn next_field(&mut self) -> Result<Option<(u32, WireValue<'a>)>, TranscodeError> {
        if self.at == self.bytes.len() {
            return Ok(None);
        }
        let tag = self.varint()?;
        let number = u32::try_from(tag >> 3)
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| malformed(format!("field number {}", tag >> 3)))?;
        let value = match tag & 7 {
            0 => WireValue::Varint(self.varint()?),
            1 => WireValue::Fixed64(u64::from_le_bytes(self.take(8)?.try_into().expect("8"))),
            2 => {
                let len = usize::try_from(self.varint()?)
                    .map_err(|_| malformed("a length beyond memory".into()))?;
                WireValue::Bytes(self.take(len)?)
            }
            5 => WireValue::Fixed32(u32::from_le_bytes(self.take(4)?.try_into().expect("4"))),
            other => return Err(malformed(format!("wire type {other} of field {number}"))),
        };
        Ok(Some((number, value)))
    }

    /// A base-128 varint at the cursor.
    pub fn varint(&mut self) -> Result<u64, TranscodeError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self
                .bytes
                .get(self.at)
                .ok_or_else(|| malformed("a varint cut short".into()))?;
            self.at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(malformed("a varint longer than ten bytes".into()))
    }

    /// Whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.at == self.bytes.len()
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8], TranscodeError> {
        let end = self
            .at
            .checked_add(len)
            .filter(|end| *end <= self.bytes.len())
            .ok_or_else(|| malformed(format!("{len} bytes promised, fewer left")))?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }
}

fn malformed(what: String) -> TranscodeError {
    TranscodeError::Malformed(what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_wire_type() {
        // 1: varint 300; 2: "hi"; 3: fixed64 1.5; 4: fixed32 7.
        let mut bytes = vec![0x08, 0xac, 0x02, 0x12, 2, b'h', b'i', 0x19];
        bytes.extend_from_slice(&1.5f64.to_le_bytes());
        bytes.push(0x25);
        bytes.extend_from_slice(&7u32.to_le_bytes());
        let mut fields = Fields::new(&bytes);
        assert_eq!(
            fields.next_field().unwrap(),
            Some((1, WireValue::Varint(300)))
        );
        assert_eq!(
            fields.next_field().unwrap(),
            Some((2, WireValue::Bytes(b"hi")))
        );
        assert_eq!(
            fields.next_field().unwrap(),
            Some((3, WireValue::Fixed64(1.5f64.to_bits())))
        );
        assert_eq!(
            fields.next_field().unwrap(),
            Some((4, WireValue::Fixed32(7)))
        );
        assert_eq!(fields.next_field().unwrap(), None);
    }

    #[test]
    fn refuses_what_runs_past_the_end_or_is_not_protobuf() {
        for bytes in [
            &[0x12, 5, b'a'][..],
            &[0x08, 0xff][..],
            &[0x0b][..],
            &[0x00, 0x01][..],
            &[
                0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
            ][..],
        ] {
            let mut fields = Fields::new(bytes);
            assert!(
                matches!(fields.next_field(), Err(TranscodeError::Malformed(_))),
                "{bytes:?}"
            );
        }
    }
}
