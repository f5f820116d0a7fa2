//! World 0.7.0's delivery frames, read: one or more notifications in one
//! list of bytes (the layout `wit/0.7.0/herald.wit` documents on
//! `delivery`). The frame arrives as one allocation; every event read from
//! it shares that memory ([`Text`]), so a notification's object is copied
//! into the plugin once, by the host, and never again.

use std::cell::OnceCell;
use std::fmt;
use std::ops::Range;
use std::rc::Rc;

use crate::{Context, Event, GroupVersionKind, Update};

/// What happened, the first byte of a notification.
pub(crate) const ADDED: u8 = 0;
pub(crate) const UPDATED: u8 = 1;
pub(crate) const DELETED: u8 = 2;

/// The flags byte.
const INITIAL_LIST: u8 = 1;
const RESYNC: u8 = 2;
const FINAL_STATE_UNKNOWN: u8 = 4;
const OLD_STATE: u8 = 8;
const KNOWN_FLAGS: u8 = INITIAL_LIST | RESYNC | FINAL_STATE_UNKNOWN | OLD_STATE;

/// Text inside a frame (or a string of its own, for events built in
/// tests), shared by every event read from the frame.
#[derive(Clone)]
pub(crate) struct Text {
    bytes: Rc<Vec<u8>>,
    range: Range<usize>,
}

impl Text {
    /// The text as a `str`.
    pub(crate) fn as_str(&self) -> &str {
        utf8(&self.bytes[self.range.clone()])
    }
}

impl From<String> for Text {
    fn from(text: String) -> Self {
        let range = 0..text.len();
        Text {
            bytes: Rc::new(text.into_bytes()),
            range,
        }
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Text {}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// A notification's context: given whole (an event built from its parts)
/// or read from a frame, whose strings are read in place and made into a
/// [`Context`] only when the handler asks for one, so that a call that
/// reads only the key, or nothing, allocates none of them.
#[derive(Clone)]
pub(crate) enum Head {
    /// Built from its parts.
    Built(Context),
    /// In a frame.
    Framed(Framed),
}

/// A context in a frame: its six strings' ranges and its flags.
#[derive(Clone)]
pub(crate) struct Framed {
    bytes: Rc<Vec<u8>>,
    /// Group, version, kind, resource, key, resourceVersion.
    fields: [Range<usize>; 6],
    flags: u8,
    context: OnceCell<Context>,
}

impl Framed {
    fn field(&self, index: usize) -> &str {
        utf8(&self.bytes[self.fields[index].clone()])
    }
}

impl Head {
    /// The whole context.
    pub(crate) fn context(&self) -> &Context {
        match self {
            Head::Built(context) => context,
            Head::Framed(framed) => framed.context.get_or_init(|| Context {
                kind: GroupVersionKind::new(framed.field(0), framed.field(1), framed.field(2)),
                resource: framed.field(3).to_owned(),
                key: framed.field(4).to_owned(),
                resource_version: framed.field(5).to_owned(),
                is_initial_list: framed.flags & INITIAL_LIST != 0,
                is_resync: framed.flags & RESYNC != 0,
                final_state_unknown: framed.flags & FINAL_STATE_UNKNOWN != 0,
            }),
        }
    }

    /// The plural resource name.
    pub(crate) fn resource(&self) -> &str {
        match self {
            Head::Built(context) => &context.resource,
            Head::Framed(framed) => framed.field(3),
        }
    }

    /// The object's key.
    pub(crate) fn key(&self) -> &str {
        match self {
            Head::Built(context) => &context.key,
            Head::Framed(framed) => framed.field(4),
        }
    }

    /// The (new) object's resourceVersion.
    pub(crate) fn resource_version(&self) -> &str {
        match self {
            Head::Built(context) => &context.resource_version,
            Head::Framed(framed) => framed.field(5),
        }
    }

    /// Whether `flag` is set (a built context's flags, as a frame writes
    /// them).
    fn flag(&self, flag: u8) -> bool {
        match self {
            Head::Built(context) => match flag {
                INITIAL_LIST => context.is_initial_list,
                RESYNC => context.is_resync,
                _ => context.final_state_unknown,
            },
            Head::Framed(framed) => framed.flags & flag != 0,
        }
    }

    /// A synthetic add replaying the cache.
    pub(crate) fn is_initial_list(&self) -> bool {
        self.flag(INITIAL_LIST)
    }

    /// A periodic resync.
    pub(crate) fn is_resync(&self) -> bool {
        self.flag(RESYNC)
    }

    /// A delete inferred from a relist.
    pub(crate) fn final_state_unknown(&self) -> bool {
        self.flag(FINAL_STATE_UNKNOWN)
    }
}

impl PartialEq for Head {
    fn eq(&self, other: &Self) -> bool {
        self.context() == other.context()
    }
}

impl Eq for Head {}

impl fmt::Debug for Head {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.context(), f)
    }
}

/// Bytes the host promises are UTF-8 (a [`Text`] is made from a `String`
/// or from a frame, whose every string the WIT declares UTF-8), read as a
/// `str` the way wit-bindgen lifts a `string`: checked in debug builds,
/// trusted in release builds, where checking would cost every call a pass
/// over the object.
#[allow(unsafe_code)]
fn utf8(bytes: &[u8]) -> &str {
    if cfg!(debug_assertions) {
        std::str::from_utf8(bytes).expect("the host sends UTF-8")
    } else {
        // SAFETY: the host writes only UTF-8 into a frame's strings (the
        // contract of world 0.7.0's `delivery`), and a `String`'s bytes
        // are UTF-8; the ranges are whole strings the frame measured.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }
}

/// One notification of a frame.
#[derive(Debug)]
pub(crate) enum Notification {
    /// `on_add`.
    Added(Event),
    /// `on_update`.
    Updated(Update),
    /// `on_delete`.
    Deleted(Event),
}

/// The notifications of a frame, in order: each an error (naming what is
/// wrong) once the frame stops making sense, which ends the reading.
pub(crate) struct Notifications {
    bytes: Rc<Vec<u8>>,
    at: usize,
    left: u32,
    broken: bool,
}

impl Notifications {
    /// Reads `frame`. One too short for its count reads as one
    /// notification, whose reading names where the frame ends.
    pub(crate) fn new(frame: Vec<u8>) -> Self {
        let mut reader = Notifications {
            bytes: Rc::new(frame),
            at: 0,
            left: 1,
            broken: false,
        };
        if let Ok(count) = reader.u32() {
            reader.left = count;
        }
        reader
    }

    fn u32(&mut self) -> Result<u32, String> {
        let end = self
            .at
            .checked_add(4)
            .filter(|end| *end <= self.bytes.len());
        let Some(end) = end else {
            return Err(format!(
                "the frame ends at byte {} inside a length",
                self.bytes.len()
            ));
        };
        let mut word = [0; 4];
        word.copy_from_slice(&self.bytes[self.at..end]);
        self.at = end;
        Ok(u32::from_le_bytes(word))
    }

    fn text(&mut self, length: u32) -> Result<Text, String> {
        let range = self.range(length)?;
        Ok(Text {
            bytes: self.bytes.clone(),
            range,
        })
    }

    fn range(&mut self, length: u32) -> Result<Range<usize>, String> {
        let end = usize::try_from(length)
            .ok()
            .and_then(|length| self.at.checked_add(length))
            .filter(|end| *end <= self.bytes.len());
        let Some(end) = end else {
            return Err(format!(
                "a field of {length} bytes at byte {} runs past the frame's end ({} bytes)",
                self.at,
                self.bytes.len()
            ));
        };
        let range = self.at..end;
        self.at = end;
        Ok(range)
    }

    fn notification(&mut self) -> Result<Notification, String> {
        let head = self.u32()?.to_le_bytes();
        let [what, flags, ..] = head;
        if flags & !KNOWN_FLAGS != 0 || head[2..] != [0, 0] {
            return Err(format!("unknown flags {head:02x?} (a newer host?)"));
        }
        let mut lengths = [0; 7];
        for length in &mut lengths {
            *length = self.u32()?;
        }
        let mut fields: [Range<usize>; 6] = Default::default();
        for (field, length) in fields.iter_mut().zip(lengths) {
            *field = self.range(length)?;
        }
        let object = self.text(lengths[6])?;
        let old = if flags & OLD_STATE != 0 {
            let length = self.u32()?;
            Some(self.text(length)?)
        } else {
            None
        };
        let context = Head::Framed(Framed {
            bytes: self.bytes.clone(),
            fields,
            flags,
            context: OnceCell::new(),
        });
        match what {
            ADDED => Ok(Notification::Added(Event::from_text(context, object))),
            UPDATED => Ok(Notification::Updated(Update::from_text(
                context, old, object,
            ))),
            DELETED => Ok(Notification::Deleted(Event::from_text(context, object))),
            other => Err(format!("unknown notification type {other} (a newer host?)")),
        }
    }
}

impl Iterator for Notifications {
    type Item = Result<Notification, String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.broken {
            return None;
        }
        if self.left == 0 {
            return (self.at != self.bytes.len()).then(|| {
                self.broken = true;
                Err(format!(
                    "{} bytes follow the frame's last notification",
                    self.bytes.len() - self.at
                ))
            });
        }
        self.left -= 1;
        let next = self.notification();
        self.broken = next.is_err();
        Some(next.map_err(|e| format!("malformed delivery frame: {e}")))
    }
}

/// Writes frames as the host does, for the SDK's own tests and the
/// stand-in host.
#[cfg(test)]
pub(crate) mod write {
    use super::*;

    /// One notification to write.
    pub(crate) struct Written<'a> {
        pub what: u8,
        pub context: &'a Context,
        pub object: &'a str,
        pub old: Option<&'a str>,
    }

    /// A frame of `notifications`.
    pub(crate) fn frame(notifications: &[Written<'_>]) -> Vec<u8> {
        let mut bytes = (notifications.len() as u32).to_le_bytes().to_vec();
        for n in notifications {
            let c = n.context;
            let flag = |set: bool, bit: u8| if set { bit } else { 0 };
            let flags = flag(c.is_initial_list, INITIAL_LIST)
                | flag(c.is_resync, RESYNC)
                | flag(c.final_state_unknown, FINAL_STATE_UNKNOWN)
                | flag(n.old.is_some(), OLD_STATE);
            bytes.extend([n.what, flags, 0, 0]);
            let fields = [
                c.kind.group.as_str(),
                &c.kind.version,
                &c.kind.kind,
                &c.resource,
                &c.key,
                &c.resource_version,
                n.object,
            ];
            for field in fields {
                bytes.extend((field.len() as u32).to_le_bytes());
            }
            for field in fields {
                bytes.extend(field.as_bytes());
            }
            if let Some(old) = n.old {
                bytes.extend((old.len() as u32).to_le_bytes());
                bytes.extend(old.as_bytes());
            }
        }
        bytes
    }

    pub(crate) use super::{ADDED, DELETED, UPDATED};
}

#[cfg(test)]
mod tests {
    use super::write::{ADDED, DELETED, UPDATED, Written, frame};
    use super::*;

    fn context(key: &str, initial: bool) -> Context {
        Context {
            kind: GroupVersionKind::new("apps", "v1", "Deployment"),
            resource: "deployments".into(),
            key: key.into(),
            resource_version: "7".into(),
            is_initial_list: initial,
            is_resync: false,
            final_state_unknown: !initial,
        }
    }

    #[test]
    fn a_frame_reads_back_as_the_notifications_written() {
        let (a, b, c) = (
            context("shop/a", true),
            context("shop/b", false),
            context("c", false),
        );
        let bytes = frame(&[
            Written {
                what: ADDED,
                context: &a,
                object: r#"{"a":1}"#,
                old: None,
            },
            Written {
                what: UPDATED,
                context: &b,
                object: r#"{"é":2}"#,
                old: Some("{}"),
            },
            Written {
                what: UPDATED,
                context: &b,
                object: "{}",
                old: None,
            },
            Written {
                what: DELETED,
                context: &c,
                object: r#"{"c":3}"#,
                old: None,
            },
        ]);
        let read: Vec<Notification> = Notifications::new(bytes).map(Result::unwrap).collect();
        let [
            Notification::Added(added),
            Notification::Updated(with_old),
            Notification::Updated(without_old),
            Notification::Deleted(deleted),
        ] = <[Notification; 4]>::try_from(read).unwrap()
        else {
            panic!("the notifications in order");
        };
        assert_eq!(added, Event::from_parts(a, r#"{"a":1}"#));
        assert_eq!(with_old, Update::from_parts(b.clone(), "{}", r#"{"é":2}"#));
        assert_eq!((without_old.old_json(), without_old.new_json()), ("", "{}"));
        assert!(
            without_old
                .old::<serde_json::Value>()
                .unwrap_err()
                .to_string()
                .contains("OLD_STATE")
        );
        assert_eq!(deleted, Event::from_parts(c, r#"{"c":3}"#));
    }

    #[test]
    fn a_malformed_frame_is_an_error_after_the_good_notifications() {
        let a = context("shop/a", true);
        let one = frame(&[Written {
            what: ADDED,
            context: &a,
            object: "{}",
            old: None,
        }]);
        // Two promised, one there.
        let mut short = one.clone();
        short[0] = 2;
        let read: Vec<_> = Notifications::new(short).collect();
        assert!(read[0].is_ok());
        assert!(
            read[1].as_ref().unwrap_err().contains("inside a length"),
            "{read:?}"
        );
        assert_eq!(read.len(), 2);
        // A length past the end.
        let mut long = one.clone();
        long[4 + 4 + 6 * 4] = 200;
        let error = Notifications::new(long).next().unwrap().unwrap_err();
        assert!(error.contains("runs past the frame's end"), "{error}");
        // Unknown kinds of notification and flags, bytes after the last.
        let mut kind = one.clone();
        kind[4] = 9;
        assert!(
            Notifications::new(kind)
                .next()
                .unwrap()
                .unwrap_err()
                .contains("type 9")
        );
        let mut flags = one.clone();
        flags[5] = 0x40;
        assert!(
            Notifications::new(flags)
                .next()
                .unwrap()
                .unwrap_err()
                .contains("unknown flags")
        );
        let mut trailing = one.clone();
        trailing.push(b'x');
        let read: Vec<_> = Notifications::new(trailing).collect();
        assert!(
            read[1].as_ref().unwrap_err().contains("1 bytes follow"),
            "{read:?}"
        );
        assert!(Notifications::new(vec![1, 0]).next().unwrap().is_err());
        assert!(
            Notifications::new(0u32.to_le_bytes().to_vec())
                .next()
                .is_none()
        );
    }
}
