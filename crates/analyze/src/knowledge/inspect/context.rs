//! Unwrapping an Android context as LeakCanary does: through `ContextWrapper.mBase` (and
//! a `DecorContext`'s phone window) to the Activity, Application or Service it stands for.

use super::kinds::{Component, Kind};
use super::vocab::{Checked, Inspectors, Inst, Missing};

/// Wrappers followed at most: real apps nest a few; a dump may chain any number.
const MAX_UNWRAP: usize = 32;

/// What a context stands for.
#[derive(Debug, Clone, Copy)]
pub enum Unwrapped {
    /// Not a component context (none of the four context classes, or a wrapper of none).
    None,
    Activity(Inst),
    Application(Inst),
    Service(Inst),
}

impl Unwrapped {
    pub fn inst(&self) -> Option<Inst> {
        match *self {
            Unwrapped::None => None,
            Unwrapped::Activity(i) | Unwrapped::Application(i) | Unwrapped::Service(i) => Some(i),
        }
    }
}

impl Inspectors<'_> {
    fn component(&self, o: Inst) -> Unwrapped {
        if o.kinds.is(Kind::Activity) {
            Unwrapped::Activity(o)
        } else if o.kinds.is(Kind::Application) {
            Unwrapped::Application(o)
        } else {
            Unwrapped::Service(o)
        }
    }

    /// Shark's `unwrapComponentContext`: the Activity, Application or Service `o` is or
    /// wraps.
    pub fn unwrap_context(&self, o: &Inst) -> Checked<Unwrapped> {
        const WRAPPER: &str = "android.content.ContextWrapper";
        match o.kinds.component {
            None => return Ok(Unwrapped::None),
            Some(Component::ContextWrapper) => {}
            // The object itself, whatever it may also wrap.
            Some(_) => return Ok(self.component(*o)),
        }
        let mut context = *o;
        let mut visited = vec![o.node];
        for _ in 0..MAX_UNWRAP {
            let base = self.req_ref(&context, WRAPPER, "mBase")?;
            if base == 0 {
                return Ok(Unwrapped::None);
            }
            let wrapper = context;
            let Some(next) = self.inst_id(base) else {
                return Ok(Unwrapped::None);
            };
            context = next;
            let matching = context.kinds.component;
            let mut is_wrapper = matching == Some(Component::ContextWrapper);
            if matching == Some(Component::Activity) {
                return Ok(Unwrapped::Activity(context));
            }
            if wrapper.kinds.is(Kind::DecorContext) {
                const DECOR: &str = "com.android.internal.policy.DecorContext";
                if let Some(window) = self.opt(&wrapper, DECOR, "mPhoneWindow") {
                    // Shark requires a window here; a reference that is no Window (a
                    // WeakReference on some releases) ends the unwrapping.
                    let window = window
                        .as_object()
                        .and_then(|id| self.inst_id(id))
                        .ok_or(Missing::null(DECOR, "mPhoneWindow"))?;
                    if !window.kinds.is(Kind::Window) {
                        return Ok(Unwrapped::None);
                    }
                    context = self.req_inst(&window, "android.view.Window", "mContext")?;
                    if context.kinds.is(Kind::Activity) {
                        return Ok(Unwrapped::Activity(context));
                    }
                    is_wrapper = context.kinds.is(Kind::ContextWrapper);
                }
            }
            if matches!(
                matching,
                Some(Component::Service) | Some(Component::Application)
            ) {
                return Ok(self.component(context));
            }
            if !is_wrapper || visited.contains(&context.node) {
                return Ok(Unwrapped::None);
            }
            visited.push(context.node);
        }
        Ok(Unwrapped::None)
    }

    /// The Activity `o` is or wraps.
    pub fn unwrap_activity(&self, o: &Inst) -> Checked<Option<Inst>> {
        Ok(match self.unwrap_context(o)? {
            Unwrapped::Activity(a) => Some(a),
            _ => None,
        })
    }

    /// Whether `o` is or wraps an Activity whose `mDestroyed` is true.
    pub fn wraps_destroyed_activity(&self, o: &Inst) -> Checked<bool> {
        Ok(self
            .unwrap_activity(o)?
            .is_some_and(|a| self.destroyed(&a) == Some(true)))
    }
}
