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
    use crate::admission::{AdmissionReview, Mutation, Verdict};
    use crate::bindings;
    use crate::bindings::exports::herald::plugin0_2_0::handler::{
        EventContext, Guest as HandlerGuest,
    };
    use crate::bindings::exports::herald::plugin0_5_0::admission::{self, Guest as AdmissionGuest};
    use crate::{Context, Error, Event, Update};

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

    impl<H: Handler> HandlerGuest for Export<H> {
        fn on_add(context: EventContext, object: String) -> Result<(), String> {
            let event = Event::from_parts(Context::from_wit(context), object);
            with_handler(|handler: &mut H| handler.on_add(&event))
        }

        fn on_update(context: EventContext, old: String, new: String) -> Result<(), String> {
            let update = Update::from_parts(Context::from_wit(context), old, new);
            with_handler(|handler: &mut H| handler.on_update(&update))
        }

        fn on_delete(context: EventContext, object: String) -> Result<(), String> {
            let event = Event::from_parts(Context::from_wit(context), object);
            with_handler(|handler: &mut H| handler.on_delete(&event))
        }
    }

    // The tests run against the native stand-in host.
    #[cfg(all(test, not(target_arch = "wasm32")))]
    mod tests {
        use super::*;
        use crate::bindings::herald::plugin0_2_0::types::GroupVersionKind;
        use crate::{Manifest, Subscription};

        #[derive(Default)]
        struct Counting {
            calls: Vec<String>,
        }

        impl Handler for Counting {
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
                self.calls
                    .push(format!("update {} after {}", event.key(), self.calls.len()));
                crate::info!("{}", self.calls.join("; "));
                Ok(())
            }
        }

        fn context(key: &str) -> EventContext {
            EventContext {
                kind: GroupVersionKind {
                    group: String::new(),
                    version: "v1".into(),
                    kind: "Pod".into(),
                },
                resource: "pods".into(),
                key: key.into(),
                resource_version: "1".into(),
                is_initial_list: false,
                is_resync: false,
                final_state_unknown: false,
            }
        }

        #[test]
        fn state_persists_across_calls_and_errors_become_strings() {
            crate::testing::reset();
            assert_eq!(
                <Export<Counting> as bindings::Guest>::manifest().name,
                "counting"
            );
            assert_eq!(
                Export::<Counting>::on_add(context("a/good"), "{}".into()),
                Ok(())
            );
            assert_eq!(
                Export::<Counting>::on_add(context("a/bad"), "{}".into()),
                Err("bad pod".to_owned())
            );
            assert_eq!(
                Export::<Counting>::on_update(context("a/good"), "{}".into(), "{}".into()),
                Ok(())
            );
            assert_eq!(
                Export::<Counting>::on_delete(context("a/good"), "{}".into()),
                Ok(())
            );
            assert_eq!(
                crate::testing::take_messages(),
                ["add a/good; add a/bad; update a/good after 2"]
            );
        }
    }
}
