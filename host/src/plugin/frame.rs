//! World 0.7.0's delivery frame: one or more notifications as one list of
//! bytes, so that a call lowers one value into the plugin's memory (one
//! allocation, one copy) instead of 0.2.0's seven. The layout is the one
//! `wit/0.7.0/herald.wit` documents on `delivery`; the SDKs decode it.

use crate::wit::abi::EventContext;

/// What a notification says happened, with its objects' JSON.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Change<'a> {
    Added(&'a str),
    Updated { old: &'a str, new: &'a str },
    Deleted(&'a str),
}

/// What happened, the frame's first byte of a notification.
const ADDED: u8 = 0;
const UPDATED: u8 = 1;
const DELETED: u8 = 2;

/// The flags byte.
const INITIAL_LIST: u8 = 1;
const RESYNC: u8 = 2;
const FINAL_STATE_UNKNOWN: u8 = 4;
const OLD_STATE: u8 = 8;

/// A frame being written.
#[derive(Debug, Default)]
pub(crate) struct Frame {
    bytes: Vec<u8>,
    count: u32,
}

impl Frame {
    /// An empty frame written into `bytes` (cleared; its allocation is
    /// reused).
    pub(crate) fn reusing(mut bytes: Vec<u8>) -> Self {
        bytes.clear();
        bytes.extend_from_slice(&0u32.to_le_bytes());
        Frame { bytes, count: 0 }
    }

    /// The frame's buffer, to be reused for the next frame: kept unless it
    /// grew past `keep` bytes (one huge object must not pin its size in
    /// every instance for good).
    pub(crate) fn into_buffer(self, keep: usize) -> Vec<u8> {
        if self.bytes.capacity() > keep {
            Vec::new()
        } else {
            self.bytes
        }
    }

    /// Appends a notification; its old state only when `old_state` (the
    /// plugin asked for it) and the call is an update.
    pub(crate) fn push(&mut self, ctx: &EventContext, change: Change<'_>, old_state: bool) {
        let (what, object, old) = match change {
            Change::Added(object) => (ADDED, object, None),
            Change::Updated { old, new } => (UPDATED, new, old_state.then_some(old)),
            Change::Deleted(object) => (DELETED, object, None),
        };
        let flags = flag(ctx.is_initial_list, INITIAL_LIST)
            | flag(ctx.is_resync, RESYNC)
            | flag(ctx.final_state_unknown, FINAL_STATE_UNKNOWN)
            | flag(old.is_some(), OLD_STATE);
        let fields = [
            ctx.kind.group.as_str(),
            &ctx.kind.version,
            &ctx.kind.kind,
            &ctx.resource,
            &ctx.key,
            &ctx.resource_version,
            object,
        ];
        self.bytes.extend_from_slice(&[what, flags, 0, 0]);
        for field in fields {
            self.bytes.extend_from_slice(&length(field).to_le_bytes());
        }
        for field in fields {
            self.bytes.extend_from_slice(field.as_bytes());
        }
        if let Some(old) = old {
            self.bytes.extend_from_slice(&length(old).to_le_bytes());
            self.bytes.extend_from_slice(old.as_bytes());
        }
        self.count += 1;
        self.bytes[..4].copy_from_slice(&self.count.to_le_bytes());
    }

    /// The frame's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

fn flag(set: bool, bit: u8) -> u8 {
    if set { bit } else { 0 }
}

/// A field's length as the frame writes it. Objects are bounded far below
/// 4 GiB (the store's and the plugin's memory limits); a longer one would
/// be a bug worth stopping at.
fn length(field: &str) -> u32 {
    u32::try_from(field.len()).expect("a notification's field is shorter than 4 GiB")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wit::abi::GroupVersionKind;

    fn context(initial: bool, resync: bool, unknown: bool) -> EventContext {
        EventContext {
            kind: GroupVersionKind {
                group: "apps".into(),
                version: "v1".into(),
                kind: "Deployment".into(),
            },
            resource: "deployments".into(),
            key: "shop/web".into(),
            resource_version: "42".into(),
            is_initial_list: initial,
            is_resync: resync,
            final_state_unknown: unknown,
        }
    }

    /// The frame of one notification, written into `buffer`.
    fn encode(buffer: Vec<u8>, ctx: &EventContext, change: Change<'_>, old_state: bool) -> Frame {
        let mut frame = Frame::reusing(buffer);
        frame.push(ctx, change, old_state);
        frame
    }

    /// Reads a frame back by the layout the WIT documents, as an SDK does:
    /// per notification, what happened, the flags and its fields.
    fn decode(bytes: &[u8]) -> Vec<(u8, u8, Vec<String>)> {
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let count = u32_at(0);
        let mut at = 4;
        let mut out = Vec::new();
        for _ in 0..count {
            let (what, flags) = (bytes[at], bytes[at + 1]);
            assert_eq!(&bytes[at + 2..at + 4], [0, 0]);
            at += 4;
            let lengths: Vec<usize> = (0..7).map(|i| u32_at(at + 4 * i)).collect();
            at += 28;
            let mut fields = Vec::new();
            for length in lengths {
                fields.push(String::from_utf8(bytes[at..at + length].to_vec()).unwrap());
                at += length;
            }
            if flags & OLD_STATE != 0 {
                let length = u32_at(at);
                at += 4;
                fields.push(String::from_utf8(bytes[at..at + length].to_vec()).unwrap());
                at += length;
            }
            out.push((what, flags, fields));
        }
        assert_eq!(at, bytes.len(), "nothing follows the last notification");
        out
    }

    #[test]
    fn a_notification_is_written_as_the_wit_lays_it_out() {
        let frame = encode(
            Vec::new(),
            &context(true, false, false),
            Change::Added("{\"a\":1}"),
            true,
        );
        let fields = |object: &str| {
            [
                "apps",
                "v1",
                "Deployment",
                "deployments",
                "shop/web",
                "42",
                object,
            ]
            .map(str::to_owned)
            .to_vec()
        };
        assert_eq!(
            decode(frame.bytes()),
            [(ADDED, INITIAL_LIST, fields("{\"a\":1}"))]
        );
        // An empty object text and non-ASCII bytes go through as they are.
        let frame = encode(
            frame.into_buffer(1 << 16),
            &context(false, false, true),
            Change::Deleted("é"),
            true,
        );
        assert_eq!(
            decode(frame.bytes()),
            [(DELETED, FINAL_STATE_UNKNOWN, fields("é"))]
        );
    }

    #[test]
    fn an_update_carries_its_old_state_only_when_the_plugin_asked() {
        let call = Change::Updated {
            old: "{\"old\":1}",
            new: "{\"new\":2}",
        };
        let frame = encode(Vec::new(), &context(false, true, false), call, false);
        let [(what, flags, fields)] = decode(frame.bytes()).try_into().unwrap();
        assert_eq!((what, flags, fields.len()), (UPDATED, RESYNC, 7));
        assert_eq!(fields[6], "{\"new\":2}");
        let frame = encode(Vec::new(), &context(false, false, false), call, true);
        let [(_, flags, fields)] = decode(frame.bytes()).try_into().unwrap();
        assert_eq!(flags, OLD_STATE);
        assert_eq!(fields[6..], ["{\"new\":2}", "{\"old\":1}"]);
    }

    #[test]
    fn a_buffer_is_reused_unless_it_grew_too_large() {
        let big = "x".repeat(100);
        let frame = encode(
            Vec::new(),
            &context(false, false, false),
            Change::Added(&big),
            true,
        );
        assert!(frame.into_buffer(64).capacity() == 0);
        let frame = encode(
            Vec::new(),
            &context(false, false, false),
            Change::Added("{}"),
            true,
        );
        let buffer = frame.into_buffer(1 << 16);
        let capacity = buffer.capacity();
        let frame = encode(
            buffer,
            &context(false, false, false),
            Change::Added("{}"),
            true,
        );
        assert_eq!(frame.bytes().len(), 4 + 4 + 28 + 37 + 2);
        assert_eq!(frame.into_buffer(1 << 16).capacity(), capacity);
    }

    #[test]
    fn notifications_follow_one_another_and_the_count_says_how_many() {
        let mut frame = Frame::reusing(vec![1, 2, 3]);
        frame.push(&context(false, false, false), Change::Added("{}"), false);
        frame.push(
            &context(false, false, false),
            Change::Updated {
                old: "{}",
                new: "{\"b\":2}",
            },
            true,
        );
        frame.push(
            &context(false, false, false),
            Change::Deleted("{\"c\":3}"),
            false,
        );
        let decoded = decode(frame.bytes());
        let whats: Vec<u8> = decoded.iter().map(|(what, _, _)| *what).collect();
        assert_eq!(whats, [ADDED, UPDATED, DELETED]);
        assert_eq!(decoded[1].2.len(), 8);
        assert_eq!(decoded[2].2[6], "{\"c\":3}");
    }
}
