//! B3: memory of the cache for 10k and 100k Pods, counted exactly by the
//! counting allocator ([`crate::alloc`]): the heap bytes a filled store
//! retains, including its index and keys.
//!
//! The same variations of the 4 KB Pod, each with realistic
//! `managedFields`, fill: Herald's `Store` (its default transform strips
//! `managedFields`; unstripped as context), and kube-runtime's
//! `Store<DynamicObject>` and `Store<Pod>` (through their `Writer`, as a
//! reflector fills them), with `managedFields` set to `None` before caching
//! (the usual strip transform) and, at the smaller size, without.
//!
//! Goals: Herald ≤ 1.3× the stripped JSON bytes; `Store<DynamicObject>` +
//! strip ≥ 5× Herald's.

use crate::alloc::retained_by;
use crate::data::{Extras, PodSize, PodTemplate};
use crate::measure::Samples;
use crate::settings::Settings;
use crate::table::{Goal, Row, Unit};
use herald::store::{CachedObject, Store, Transform};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher::Event;
use std::sync::Arc;

/// Heap bytes per object of each cache, per repetition.
#[derive(Debug, Default)]
struct Caches {
    herald: Samples,
    herald_unstripped: Samples,
    dynamic: Samples,
    dynamic_unstripped: Samples,
    typed: Samples,
    typed_unstripped: Samples,
}

/// Runs B3. Without the counting allocator installed it measures nothing.
pub fn run(settings: &Settings) -> Vec<Row> {
    if crate::alloc::live_bytes().is_none() {
        crate::progress("B3 skipped: the counting allocator is not installed");
        return Vec::new();
    }
    let with_managed = PodTemplate::new(
        PodSize::Small,
        Extras {
            managed_fields: true,
            stamp: false,
        },
    );
    let stripped = PodTemplate::new(PodSize::Small, Extras::default());
    let mut rows = Vec::new();
    for &count in &settings.b3_objects {
        let raw: Vec<String> = (0..count)
            .map(|i| with_managed.render(i, 1000 + i as u64, 0))
            .collect();
        let json_bytes = raw.iter().map(String::len).sum::<usize>() as f64 / count as f64;
        let stripped_bytes = (0..count)
            .map(|i| stripped.render(i, 1000 + i as u64, 0).len())
            .sum::<usize>() as f64
            / count as f64;
        let unstripped = count <= settings.b3_unstripped_max;
        let mut caches = Caches::default();
        let per_object = |bytes: Option<isize>| bytes.unwrap_or(0) as f64 / count as f64;
        for rep in 0..settings.repetitions {
            crate::progress(format!(
                "B3 {count} Pods repetition {}/{}",
                rep + 1,
                settings.repetitions
            ));
            caches
                .herald
                .push(per_object(retained_by(|| herald_store(&raw, true)).1));
            caches
                .dynamic
                .push(per_object(retained_by(|| dynamic_store(&raw, true)).1));
            caches
                .typed
                .push(per_object(retained_by(|| typed_store(&raw, true)).1));
            if unstripped {
                caches
                    .herald_unstripped
                    .push(per_object(retained_by(|| herald_store(&raw, false)).1));
                caches
                    .dynamic_unstripped
                    .push(per_object(retained_by(|| dynamic_store(&raw, false)).1));
                caches
                    .typed_unstripped
                    .push(per_object(retained_by(|| typed_store(&raw, false)).1));
            }
        }
        let constant = |value: f64| {
            let mut s = Samples::new();
            for _ in 0..settings.repetitions {
                s.push(value);
            }
            s
        };
        let n = if count >= 1000 {
            format!("{}k", count / 1000)
        } else {
            count.to_string()
        };
        let details = format!(
            "{count} Pods: JSON {:.2} KiB/obj with managedFields, {:.2} KiB/obj stripped; Herald {:.2} KiB/obj; Store<DynamicObject>+strip {:.2}; Store<Pod>+strip {:.2}{}",
            json_bytes / 1024.0,
            stripped_bytes / 1024.0,
            caches.herald.median() / 1024.0,
            caches.dynamic.median() / 1024.0,
            caches.typed.median() / 1024.0,
            if unstripped {
                format!(
                    "; unstripped: Herald {:.2}, Store<DynamicObject> {:.2}, Store<Pod> {:.2} KiB/obj",
                    caches.herald_unstripped.median() / 1024.0,
                    caches.dynamic_unstripped.median() / 1024.0,
                    caches.typed_unstripped.median() / 1024.0
                )
            } else {
                String::new()
            }
        );
        rows.push(
            Row::ratio_of(
                format!("B3.herald-{n}"),
                format!("Herald cache (strip), {n} Pods; baseline: stripped JSON bytes"),
                Unit::BytesPerObject,
                constant(stripped_bytes),
                caches.herald.clone(),
                Goal::RatioAtMost(1.3),
            )
            .with_details(details),
        );
        rows.push(Row::ratio_of(
            format!("B3.dynamic-{n}"),
            format!("kube Store<DynamicObject> + strip, {n} Pods; baseline: Herald cache"),
            Unit::BytesPerObject,
            caches.herald.clone(),
            caches.dynamic.clone(),
            Goal::RatioAtLeast(5.0),
        ));
        rows.push(Row::ratio_of(
            format!("B3.pod-{n}"),
            format!("kube Store<Pod> + strip, {n} Pods; baseline: Herald cache"),
            Unit::BytesPerObject,
            caches.herald.clone(),
            caches.typed.clone(),
            Goal::None,
        ));
        if unstripped {
            rows.push(Row::ratio_of(
                format!("B3.herald-keep-{n}"),
                format!("Herald cache keeping managedFields, {n} Pods; baseline: JSON bytes with managedFields"),
                Unit::BytesPerObject,
                constant(json_bytes),
                caches.herald_unstripped.clone(),
                Goal::None,
            ));
            rows.push(Row::ratio_of(
                format!("B3.dynamic-keep-{n}"),
                format!("kube Store<DynamicObject> keeping managedFields, {n} Pods; baseline: Herald keeping them"),
                Unit::BytesPerObject,
                caches.herald_unstripped.clone(),
                caches.dynamic_unstripped.clone(),
                Goal::None,
            ));
            rows.push(Row::ratio_of(
                format!("B3.pod-keep-{n}"),
                format!(
                    "kube Store<Pod> keeping managedFields, {n} Pods; baseline: Herald keeping them"
                ),
                Unit::BytesPerObject,
                caches.herald_unstripped.clone(),
                caches.typed_unstripped.clone(),
                Goal::None,
            ));
        }
    }
    rows
}

/// Herald's store holding `raw`, as its reflector fills it.
fn herald_store(raw: &[String], strip: bool) -> Store {
    let transform = Transform {
        strip_managed_fields: strip,
    };
    let store = Store::new();
    for json in raw {
        let object = CachedObject::from_json(json, "v1", "Pod", transform).expect("bench Pods");
        store.upsert(Arc::new(object));
    }
    store
}

/// kube-runtime's `Store<DynamicObject>` holding `raw`.
fn dynamic_store(raw: &[String], strip: bool) -> Writer<DynamicObject> {
    let mut writer = Writer::new(ApiResource::erase::<Pod>(&()));
    for json in raw {
        let mut object: DynamicObject = serde_json::from_str(json).expect("bench Pods");
        if strip {
            object.metadata.managed_fields = None;
        }
        writer.apply_watcher_event(&Event::Apply(object));
    }
    writer
}

/// kube-runtime's `Store<Pod>` holding `raw`.
fn typed_store(raw: &[String], strip: bool) -> Writer<Pod> {
    let mut writer = Writer::default();
    for json in raw {
        let mut object: Pod = serde_json::from_str(json).expect("bench Pods");
        if strip {
            object.metadata.managed_fields = None;
        }
        writer.apply_watcher_event(&Event::Apply(object));
    }
    writer
}
