//! The [`Handler`] trait a plugin implements, and the glue that
//! [`export_plugin!`](crate::export_plugin) wires to the ABI.

use crate::admission::{AdmissionReview, Mutation, Verdict};
use crate::{Error, Event, Manifest, Update};

/// A Herald plugin: a manifest plus what to do with each notification.
///
/// The host creates one value with [`Default`] before the first notification
/// and keeps it for the life of the instance, so fields carry state from one
/// call to the next (the host discards the instance, and the state, when it
/// reloads the plugin or after a trap). Calls never overlap.
///
/// Every handler defaults to doing nothing; an `Err` is a handler failure
/// that the host records and retries with backoff a bounded number of times.
pub trait Handler: Default + 'static {
    /// Whether updates carry the old state beside the new one
    /// ([`Update::old`]). A plugin that never reads it sets this to `false`
    /// and the host does not copy it into the plugin at all.
    const OLD_STATE: bool = true;

    /// The most notifications the host may hand over in one call (each
    /// still reaches `on_add`, `on_update` or `on_delete` on its own, in
    /// order). More than 1 opts into batches of every-event notifications
    /// (coalesced ones keep one per call: their retries and requeues are
    /// per key): fewer calls for a plugin that wants throughput, one call
    /// deadline covering the batch, and an `Err` retrying only the
    /// notification that failed, alone, then those after it. A trap loses
    /// the instance and what it knew of the batch: the host delivers the
    /// batch again one notification at a time, so those handled before the
    /// trap come twice.
    const MAX_BATCH: u32 = 1;

    /// Describes the plugin: called once per load, before any handler call.
    /// [`config::get`](crate::config::get) already works here, so the
    /// operator's configuration may shape the subscriptions.
    fn manifest() -> Manifest;

    /// An object was first seen, or replayed to a plugin joining an informer
    /// that had already synced ([`Event::is_initial_list`]).
    fn on_add(&mut self, event: &Event) -> Result<(), Error> {
        let _ = event;
        Ok(())
    }

    /// An object changed; on a periodic resync ([`Update::is_resync`]) old
    /// and new are the same state.
    fn on_update(&mut self, event: &Update) -> Result<(), Error> {
        let _ = event;
        Ok(())
    }

    /// An object was deleted; the event carries its last known state
    /// ([`Event::final_state_unknown`] when the deletion was inferred).
    fn on_delete(&mut self, event: &Event) -> Result<(), Error> {
        let _ = event;
        Ok(())
    }

    /// Decides on a write the manifest's validating webhook covers
    /// ([`Manifest::validating`]); see [`admission`](crate::admission).
    /// Defaults to allowing. An `Err` is a fault, answered by the webhook's
    /// failure policy.
    fn validate(&mut self, review: &AdmissionReview) -> Result<Verdict, Error> {
        let _ = review;
        Ok(Verdict::allow())
    }

    /// Decides on, and may change, a write the manifest's mutating webhook
    /// covers ([`Manifest::mutating`]). Defaults to no change.
    fn mutate(&mut self, review: &AdmissionReview) -> Result<Mutation, Error> {
        let _ = review;
        Ok(Mutation::none())
    }
}

/// Exports a [`Handler`] as the plugin's implementation of the ABI. Use it
/// exactly once, at the root of the plugin's `cdylib` crate:
///
/// ```no_run
/// #[derive(Default)]
/// struct PodLogger;
///
/// impl herald_sdk::Handler for PodLogger {
///     fn manifest() -> herald_sdk::Manifest {
///         use herald_sdk::k8s_openapi::api::core::v1::Pod;
///         use herald_sdk::{Manifest, Subscription};
///         Manifest::new("pod-logger", "0.1.0").subscribe(Subscription::to::<Pod>())
///     }
/// }
///
/// herald_sdk::export_plugin!(PodLogger);
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! export_plugin {
    ($handler:ty) => {
        // The generated export functions are `unsafe extern "C"`: the ABI
        // boundary, written by wit-bindgen.
        #[allow(unsafe_code)]
        const _: () = {
            type HeraldPluginExport = $crate::__private::Export<$handler>;
    $crate::bindings::export!(HeraldPluginExport with_types_in $crate::bindings);
        };
    };
}

/// Glue between the generated bindings and [`Handler`]; used by
/// [`export_plugin!`](crate::export_plugin), not a supported API.
#[doc(hidden)]
pub mod export {
    use std::any::Any;
    use std::cell::RefCell;
    use std::marker::PhantomData;

    use super::Handler;
    use crate::Error;
    use crate::admission::{AdmissionReview, Mutation, Verdict};
    use crate::bindings;
    use crate::bindings::exports::herald::plugin0_5_0::admission::{self, Guest as AdmissionGuest};
    use crate::bindings::exports::herald::plugin0_7_0::delivery::{
        DeliveryOptions, Failure, Guest as DeliveryGuest,
    };
    use crate::frame::{Notification, Notifications};

    /// The type the generated export functions are instantiated with.
    pub struct Export<H>(PhantomData<H>);

    thread_local! {
        /// The plugin's one handler value; wasm instances are single-threaded.
        static INSTANCE: RefCell<Option<Box<dyn Any>>> = const { RefCell::new(None) };
    }

    /// Runs `call` on the handler, creating it on first use.
    fn with_handler<H: Handler, T>(
        call: impl FnOnce(&mut H) -> Result<T, Error>,
    ) -> Result<T, String> {
        INSTANCE.with(|cell| {
            let mut slot = cell.borrow_mut();
            let instance = slot.get_or_insert_with(|| Box::new(H::default()));
            let handler = instance
                .downcast_mut::<H>()
                .expect("one plugin type per component");
            call(handler).map_err(Error::into_message)
        })
    }

    impl<H: Handler> bindings::Guest for Export<H> {
        fn manifest() -> bindings::Manifest {
            H::manifest().into_wit()
        }
    }

    impl<H: Handler> AdmissionGuest for Export<H> {
        fn declare() -> admission::Webhooks {
            H::manifest().webhooks_into_wit()
        }

        fn validate(review: admission::Review) -> Result<admission::Verdict, String> {
            let review = AdmissionReview::from_wit(review);
            with_handler(|handler: &mut H| handler.validate(&review)).map(Verdict::into_wit)
        }

        fn mutate(review: admission::Review) -> Result<admission::Mutation, String> {
            let review = AdmissionReview::from_wit(review);
            with_handler(|handler: &mut H| handler.mutate(&review)).map(Mutation::into_wit)
        }
    }

    impl<H: Handler> DeliveryGuest for Export<H> {
        fn options() -> DeliveryOptions {
            DeliveryOptions {
                old_state: H::OLD_STATE,
                max_batch: H::MAX_BATCH.max(1),
            }
        }

        fn deliver(frame: Vec<u8>) -> Result<(), Failure> {
            for (index, notification) in Notifications::new(frame).enumerate() {
                let handled = notification.and_then(|notification| {
                    with_handler(|handler: &mut H| match &notification {
                        Notification::Added(event) => handler.on_add(event),
                        Notification::Updated(update) => handler.on_update(update),
                        Notification::Deleted(event) => handler.on_delete(event),
                    })
                });
                if let Err(message) = handled {
                    let index = u32::try_from(index).unwrap_or(u32::MAX);
                    return Err(Failure { index, message });
                }
            }
            Ok(())
        }
    }

    // The tests run against the native stand-in host.
    #[cfg(all(test, not(target_arch = "wasm32")))]
    mod tests {
        use super::*;
        use crate::frame::write::{ADDED, DELETED, UPDATED, Written, frame};
        use crate::{Context, Event, GroupVersionKind, Manifest, Subscription, Update};

        #[derive(Default)]
        struct Counting {
            calls: Vec<String>,
        }

        impl Handler for Counting {
            const MAX_BATCH: u32 = 8;

            fn manifest() -> Manifest {
                Manifest::new("counting", "1")
                    .subscribe(Subscription::to::<k8s_openapi::api::core::v1::Pod>())
            }

            fn on_add(&mut self, event: &Event) -> Result<(), Error> {
                self.calls.push(format!("add {}", event.key()));
                if event.name() == "bad" {
                    Err(Error::msg("bad pod"))
                } else {
                    Ok(())
                }
            }

            fn on_update(&mut self, event: &Update) -> Result<(), Error> {
                self.calls.push(format!(
                    "update {} from {} after {}",
                    event.key(),
                    event.old_json(),
                    self.calls.len()
                ));
                crate::info!("{}", self.calls.join("; "));
                Ok(())
            }
        }

        #[derive(Default)]
        struct NewOnly;

        impl Handler for NewOnly {
            const OLD_STATE: bool = false;

            fn manifest() -> Manifest {
                Manifest::new("new-only", "1")
            }
        }

        fn context(key: &str) -> Context {
            Context {
                kind: GroupVersionKind::new("", "v1", "Pod"),
                resource: "pods".into(),
                key: key.into(),
                resource_version: "1".into(),
                is_initial_list: false,
                is_resync: false,
                final_state_unknown: false,
            }
        }

        fn one(what: u8, key: &str, old: Option<&str>) -> Vec<u8> {
            frame(&[Written {
                what,
                context: &context(key),
                object: "{}",
                old,
            }])
        }

        #[test]
        fn state_persists_across_calls_and_errors_become_failures() {
            crate::testing::reset();
            assert_eq!(
                <Export<Counting> as bindings::Guest>::manifest().name,
                "counting"
            );
            assert!(Export::<Counting>::deliver(one(ADDED, "a/good", None)).is_ok());
            let failure = Export::<Counting>::deliver(one(ADDED, "a/bad", None)).unwrap_err();
            assert_eq!((failure.index, failure.message.as_str()), (0, "bad pod"));
            assert!(Export::<Counting>::deliver(one(UPDATED, "a/good", Some("{\"v\":1}"))).is_ok());
            assert!(Export::<Counting>::deliver(one(DELETED, "a/good", None)).is_ok());
            assert_eq!(
                crate::testing::take_messages(),
                ["add a/good; add a/bad; update a/good from {\"v\":1} after 2"]
            );
        }

        #[test]
        fn a_batch_is_handled_in_order_and_a_failure_names_where_it_stopped() {
            crate::testing::reset();
            let (good, bad, later) = (context("a/one"), context("a/bad"), context("a/later"));
            let batch = frame(&[
                Written {
                    what: ADDED,
                    context: &good,
                    object: "{}",
                    old: None,
                },
                Written {
                    what: ADDED,
                    context: &bad,
                    object: "{}",
                    old: None,
                },
                Written {
                    what: ADDED,
                    context: &later,
                    object: "{}",
                    old: None,
                },
            ]);
            let failure = Export::<Counting>::deliver(batch).unwrap_err();
            assert_eq!((failure.index, failure.message.as_str()), (1, "bad pod"));
            INSTANCE.with(|cell| {
                let slot = cell.borrow();
                let counting = slot.as_ref().unwrap().downcast_ref::<Counting>().unwrap();
                // The one after the failure was not handled.
                assert_eq!(counting.calls, ["add a/one", "add a/bad"]);
            });
            let malformed = Export::<Counting>::deliver(vec![1, 0, 0, 0, 0]).unwrap_err();
            assert_eq!(malformed.index, 0);
            assert!(
                malformed.message.contains("malformed delivery frame"),
                "{}",
                malformed.message
            );
        }

        #[test]
        fn the_options_say_what_the_handler_declared() {
            let counting = Export::<Counting>::options();
            assert_eq!((counting.old_state, counting.max_batch), (true, 8));
            let new_only = Export::<NewOnly>::options();
            assert_eq!((new_only.old_state, new_only.max_batch), (false, 1));
        }
    }
}
