//! Android's components and contexts: Activity, Service, the Context fields of any object,
//! ContextWrapper, ApplicationPackageManager, ContextImpl; MessageQueue, Message,
//! LoadedApk and Binder stubs. Each deciding inspector with the finder rule of its class.

use crate::base::map::Set;
use hprof_shrink_core::hprof::{BasicType, Value};

use super::context::Unwrapped;
use super::kinds::{Component, Kind};
use super::vocab::{Checked, Inspectors, Inst, Missing, Report};
use crate::base::limits::{MAX_NAME_BYTES, MAX_STEP_LABELS};
use crate::base::shown::clipped;

const ACTIVITY: &str = "android.app.Activity";

/// ACTIVITY: `mDestroyed` (since API 17; nothing without it). `mFinished` (KOOM's sign)
/// is a label only: an Activity finishing is not yet destroyed.
pub fn activity(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    match ins.destroyed(o) {
        Some(true) => r.yes("Activity#mDestroyed is true".into()),
        Some(false) => r.no("Activity#mDestroyed is false".into()),
        None => {}
    }
    if let Some(finished) = ins.opt_bool(o, ACTIVITY, "mFinished") {
        r.label(format!("Activity#mFinished is {finished}"));
    }
    Ok(())
}

pub fn activity_leaking(ins: &Inspectors<'_>, o: &Inst) -> bool {
    ins.destroyed(o) == Some(true)
}

/// The ids of the Services `ActivityThread.sCurrentActivityThread.mServices` holds, read
/// on first need.
fn alive_services<'i>(ins: &'i Inspectors<'_>) -> &'i Checked<Set<u64>> {
    ins.services.get_or_init(|| read_alive_services(ins))
}

/// The Services `ActivityThread.sCurrentActivityThread.mServices` (an ArrayMap) holds.
fn read_alive_services(ins: &Inspectors<'_>) -> Checked<Set<u64>> {
    const THREAD: &str = "android.app.ActivityThread";
    let class = ins
        .heap
        .class(THREAD)
        .ok_or(Missing::field(THREAD, "sCurrentActivityThread"))?;
    let current = ins
        .heap
        .static_field(class, "sCurrentActivityThread")
        .and_then(|v| v.as_object())
        .and_then(|id| ins.inst_id(id))
        .ok_or(Missing::null(THREAD, "sCurrentActivityThread"))?;
    let services = ins.req_inst(&current, THREAD, "mServices")?;
    let array = ins.req_ref(&services, "android.util.ArrayMap", "mArray")?;
    let elements = ins
        .heap
        .node(array)
        .and_then(|n| ins.heap.elements(n))
        .ok_or(Missing::null("android.util.ArrayMap", "mArray"))?;
    Ok(elements.skip(1).step_by(2).filter(|&id| id != 0).collect())
}

/// SERVICE: held by ActivityThread (running) or not (destroyed).
pub fn service(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    if service_alive(ins, o)? {
        r.no("Service held by ActivityThread".into());
    } else {
        r.yes("Service not held by ActivityThread".into());
    }
    Ok(())
}

fn service_alive(ins: &Inspectors<'_>, o: &Inst) -> Checked<bool> {
    match alive_services(ins) {
        Ok(ids) => Ok(ids.contains(&ins.heap.ix.id(o.node))),
        Err(m) => Err(*m),
    }
}

pub fn service_leaking(ins: &Inspectors<'_>, o: &Inst) -> Checked<bool> {
    Ok(!service_alive(ins, o)?)
}

/// CONTEXT_FIELD: a label for every field of the object that holds a Context, saying what
/// the context stands for.
pub fn context_field(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    let heap = &ins.heap;
    let Some((_, data)) = heap.instance_data(o.node) else {
        return Ok(());
    };
    let Ok(layout) = heap.ix.classes.layout(heap.ix.data, o.class) else {
        return Ok(());
    };
    let n = heap.ix.id_size;
    let mut labels = Vec::new();
    for f in layout.fields.iter().filter(|f| f.ty == BasicType::Object) {
        let Some(bytes) = data.get(f.offset as usize..f.offset as usize + n as usize) else {
            continue;
        };
        let Value::Object(id) = Value::read(BasicType::Object, bytes, n) else {
            continue;
        };
        let Some(value) = ins.inst_id(id) else {
            continue;
        };
        if !value.kinds.is(Kind::Context) {
            continue;
        }
        let field = clipped(
            &heap.names.field_name(f.declared_by, f.name_id),
            MAX_NAME_BYTES,
        );
        let class = ins.class_name(&value);
        labels.push(match ins.unwrap_context(&value)? {
            Unwrapped::None => format!("{field} instance of {class}"),
            Unwrapped::Activity(a) => {
                let destroyed = match ins.destroyed(&a) {
                    Some(d) => d.to_string(),
                    None => "UNKNOWN".into(),
                };
                if a.node == value.node {
                    format!("{field} instance of {class} with mDestroyed = {destroyed}")
                } else {
                    format!(
                        "{field} instance of {class}, wrapping activity {} with mDestroyed = {destroyed}",
                        ins.class_name(&a)
                    )
                }
            }
            u => {
                let k = u.inst().unwrap_or(value);
                if k.node == value.node {
                    format!("{field} instance of {class}")
                } else {
                    format!("{field} instance of {class}, wrapping {}", ins.class_name(&k))
                }
            }
        });
        if labels.len() == MAX_STEP_LABELS {
            break;
        }
    }
    for l in labels {
        r.label(l);
    }
    Ok(())
}

/// CONTEXT_WRAPPER: a ContextWrapper that is no Activity, Application or Service, by what
/// it wraps. Wrapping a live Activity is only a label: the wrapper may live shorter.
pub fn context_wrapper(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    if o.kinds.component != Some(Component::ContextWrapper) {
        return Ok(());
    }
    let s = ins.simple_name(o);
    match ins.unwrap_context(o)? {
        Unwrapped::Activity(a) => match ins.destroyed(&a) {
            Some(true) => r.yes(format!(
                "{s} wraps an Activity with Activity.mDestroyed true"
            )),
            Some(false) => r.label(format!(
                "{s} wraps an Activity with Activity.mDestroyed false"
            )),
            None => {}
        },
        Unwrapped::Application(_) => r.label(format!("{s} wraps an Application context")),
        Unwrapped::Service(_) => r.label(format!("{s} wraps a Service context")),
        Unwrapped::None => r.label(format!("{s} does not wrap a known Android context")),
    }
    Ok(())
}

/// CONTEXT_WRAPPER's finder: any context that is or wraps a destroyed Activity (the
/// destroyed Activities themselves included).
pub fn context_wrapper_leaking(ins: &Inspectors<'_>, o: &Inst) -> Checked<bool> {
    ins.wraps_destroyed_activity(o)
}

const CONTEXT_IMPL: &str = "android.app.ContextImpl";

/// CONTEXT_IMPL's reading of an outer context, with `prefix` naming where it came from.
fn outer_context(
    ins: &Inspectors<'_>,
    outer: &Inst,
    context_impl: &Inst,
    prefix: &str,
    r: &mut Report,
) {
    let class = ins.class_name(outer);
    if outer.kinds.is(Kind::Activity) {
        match ins.destroyed(outer) {
            Some(true) => r.yes(format!(
                "{prefix}.mOuterContext is an instance of {class} with Activity.mDestroyed true"
            )),
            Some(false) => r.no(format!(
                "{prefix}.mOuterContext is an instance of {class} with Activity.mDestroyed false"
            )),
            None => r.label(format!("{prefix}.mOuterContext is an instance of {class}")),
        }
    } else if outer.kinds.is(Kind::Application) {
        r.no(format!(
            "{prefix}.mOuterContext is an instance of {class} which extends android.app.Application"
        ));
    } else if outer.node == context_impl.node {
        r.label(format!(
            "{prefix}.mOuterContext == ContextImpl.this: not tied to any particular lifecycle"
        ));
    } else {
        r.label(format!("{prefix}.mOuterContext is an instance of {class}"));
    }
}

/// CONTEXT_IMPL: by its outer context (the Activity, Service or Application it belongs
/// to).
pub fn context_impl(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    let outer = ins.req_inst(o, CONTEXT_IMPL, "mOuterContext")?;
    outer_context(ins, &outer, o, "ContextImpl", r);
    Ok(())
}

fn outer_destroyed(ins: &Inspectors<'_>, context_impl: &Inst) -> Checked<bool> {
    let outer = ins.req_inst(context_impl, CONTEXT_IMPL, "mOuterContext")?;
    Ok(outer.kinds.is(Kind::Activity) && ins.destroyed(&outer) == Some(true))
}

/// CONTEXT_IMPL's finder: its outer context is a destroyed Activity.
pub fn context_impl_leaking(ins: &Inspectors<'_>, o: &Inst) -> Checked<bool> {
    outer_destroyed(ins, o)
}

/// The package manager class of `o` and how a reason names its context: Shark's
/// `android.app.ApplicationContextManager` (a name no AOSP class has), and AOSP's
/// `android.app.ApplicationPackageManager` the rule was meant for.
fn package_manager_class(o: &Inst) -> Option<(&'static str, &'static str)> {
    if o.kinds.is(Kind::ApplicationContextManager) {
        Some((
            "android.app.ApplicationContextManager",
            "ApplicationContextManager.mContext",
        ))
    } else if o.kinds.is(Kind::ApplicationPackageManager) {
        Some((
            "android.app.ApplicationPackageManager",
            "ApplicationPackageManager.mContext",
        ))
    } else {
        None
    }
}

/// APPLICATION_PACKAGE_MANAGER: by the outer context of its ContextImpl.
pub fn package_manager(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    let Some((class, prefix)) = package_manager_class(o) else {
        return Ok(());
    };
    let context = ins.req_inst(o, class, "mContext")?;
    let outer = ins.req_inst(&context, CONTEXT_IMPL, "mOuterContext")?;
    outer_context(ins, &outer, o, prefix, r);
    Ok(())
}

pub fn package_manager_leaking(ins: &Inspectors<'_>, o: &Inst) -> Checked<bool> {
    let Some((class, _)) = package_manager_class(o) else {
        return Ok(false);
    };
    let context = ins.req_inst(o, class, "mContext")?;
    outer_destroyed(ins, &context)
}

const QUEUE: &str = "android.os.MessageQueue";

/// A MessageQueue's quitting flag (`mQuitting`, once spelt `mQuiting`) and the name used.
fn quitting(ins: &Inspectors<'_>, o: &Inst) -> Checked<(bool, &'static str)> {
    for name in ["mQuitting", "mQuiting"] {
        if let Some(v) = ins.opt(o, QUEUE, name) {
            return match v {
                Value::Boolean(b) => Ok((b, name)),
                _ => Err(Missing::field(QUEUE, name)),
            };
        }
    }
    Err(Missing::field(QUEUE, "mQuitting"))
}

/// MESSAGE_QUEUE: quitting is leaking (its thread is gone), else not; the thread of the
/// first message's handler as a label.
pub fn message_queue(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    let (quitting, name) = quitting(ins, o)?;
    if quitting {
        r.yes(format!("MessageQueue#{name} is true"));
    } else {
        r.no(format!("MessageQueue#{name} is false"));
    }
    if let Some(head) = ins.req_inst_or_null(o, QUEUE, "mMessages")? {
        if let Some(handler) = ins.req_inst_or_null(&head, "android.os.Message", "target")? {
            if let Some(looper) = ins.req_inst_or_null(&handler, "android.os.Handler", "mLooper")? {
                let thread = ins.req_inst(&looper, "android.os.Looper", "mThread")?;
                let name = ins.req_ref(&thread, "java.lang.Thread", "name")?;
                let name = ins.string(name, ("java.lang.Thread", "name"));
                r.label(format!(
                    "HandlerThread: \"{}\"",
                    name.as_deref().unwrap_or("null")
                ));
            }
        }
    }
    Ok(())
}

pub fn message_queue_leaking(ins: &Inspectors<'_>, o: &Inst) -> Checked<bool> {
    Ok(quitting(ins, o)?.0)
}

/// LOADED_APK: the broadcast receivers it holds, by context (`Receivers`,
/// `..Context@id`, `....Receiver@id`).
pub fn loaded_apk(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    const MAP: &str = "android.util.ArrayMap";
    let receivers = ins.req_inst(o, "android.app.LoadedApk", "mReceivers")?;
    let array = |map: &Inst| -> Checked<Vec<u64>> {
        let id = ins.req_ref(map, MAP, "mArray")?;
        ins.heap
            .node(id)
            .and_then(|n| ins.heap.elements(n))
            .map(|e| e.collect())
            .ok_or(Missing::null(MAP, "mArray"))
    };
    let outer = array(&receivers)?;
    let mut labels = Vec::new();
    let named = |i: &Inst| format!("{}@{}", ins.simple_name(i), ins.heap.ix.id(i.node));
    for pair in outer.chunks(2) {
        if labels.len() >= MAX_STEP_LABELS {
            break;
        }
        let Some(context) = ins.inst_id(pair[0]) else {
            continue;
        };
        let inner = pair
            .get(1)
            .and_then(|&id| ins.inst_id(id))
            .ok_or(Missing::null(MAP, "mArray"))?;
        labels.push(format!("..{}", named(&context)));
        for id in array(&inner)?.into_iter().step_by(2) {
            if labels.len() >= MAX_STEP_LABELS {
                break;
            }
            if let Some(receiver) = ins.inst_id(id) {
                labels.push(format!("....{}", named(&receiver)));
            }
        }
    }
    if !labels.is_empty() {
        r.label("Receivers".into());
        for l in labels {
            r.label(l);
        }
    }
    Ok(())
}

/// MESSAGE: what the message is and who handles it.
pub fn message(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    const M: &str = "android.os.Message";
    let what = ins.req_int(o, M, "what")?;
    let when = ins.req_int(o, M, "when")?;
    let obj = ins.req_ref(o, M, "obj")?;
    let callback = ins.req_ref(o, M, "callback")?;
    let target = ins.req_ref(o, M, "target")?;
    r.label(format!("Message.what = {what}"));
    // Uptimes from the dump: a difference that overflows is not shown.
    let since = ins
        .watched
        .heap_dump_uptime
        .and_then(|h| when.checked_sub(h));
    r.label(match since {
        Some(d) if d > 0 => format!("Message.when = {when} ({d} ms after heap dump)"),
        Some(d) => format!(
            "Message.when = {when} ({} ms before heap dump)",
            d.unsigned_abs()
        ),
        None => format!("Message.when = {when}"),
    });
    let text = |id: u64| clipped(&ins.heap.object_text(id), MAX_NAME_BYTES);
    r.label(format!("Message.obj = {}", text(obj)));
    r.label(format!("Message.callback = {}", text(callback)));
    r.label(format!("Message.target = {}", text(target)));
    Ok(())
}

/// STUB: LeakCanary HEAD's label on Binder stubs (Shark 2.14 builds it and drops it).
pub fn stub(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) {
    let s = ins.simple_name(o);
    r.label(format!(
        "{s} is a binder stub. Binder stubs will often be retained long after the associated activity or service is destroyed, as by design stubs are retained until the other side gets GCed. If {s} is not a *static* inner class then that's most likely the root cause of this leak. Make it static. If {s} is an Android Framework class, file a ticket here: https://issuetracker.google.com/issues/new?component=192705"
    ));
}
