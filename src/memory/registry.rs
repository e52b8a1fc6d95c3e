//! The bounded registry of named, process-lifetime domains.
//!
//! ```text
//! DomainRegistry<N>
//!   core                      always present, never registered, no lazy init
//!   slots[0 .. len]           ready == true, immutable after publication
//!   slots[len .. N]           empty
//! ```
//! Registration is cold and serialized by a spin lock; a slot is written under the lock and
//! then published with `ready.store(true, Release)`. Lookups read `ready` with `Acquire` and
//! never take the lock. Slots fill in order and are never emptied, so `&AllocationDomain`
//! borrows stay valid for the registry's lifetime (`'static` for the process registry).

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;

use super::backend::Backend;
use super::domain::AllocationDomain;
use super::tag::{domain_tag, DomainName, RegisterError};
use super::usage::CounterMode;
use crate::sync::{AtomicBool, AtomicUsize, Ordering};

/// Name of the built-in domain.
pub const CORE_DOMAIN_NAME: &str = "core";

/// Named domains the process registry holds besides `core`.
pub const REGISTRY_CAPACITY: usize = 31;

struct Slot {
    /// `true` once `domain` is initialized; never reset.
    ready: AtomicBool,
    domain: UnsafeCell<MaybeUninit<AllocationDomain>>,
}

impl Slot {
    #[cfg(not(loom))]
    const fn new() -> Self {
        Self {
            ready: AtomicBool::new(false),
            domain: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    #[cfg(loom)]
    fn new() -> Self {
        Self {
            ready: AtomicBool::new(false),
            domain: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    fn get(&self) -> Option<&AllocationDomain> {
        if self.ready.load(Ordering::Acquire) {
            // SAFETY: `ready` was stored `true` (Release) after the domain was written, and
            // the slot is never written again, so it is initialized and immutable.
            Some(unsafe { (*self.domain.get()).assume_init_ref() })
        } else {
            None
        }
    }
}

/// A bounded table of `N` named domains plus the built-in core domain.
///
/// The process-wide instance is reached through [`AllocationDomain::core`] and
/// [`AllocationDomain::register`]; tests (and loom models) may build their own.
pub struct DomainRegistry<const N: usize> {
    core: AllocationDomain,
    /// Held while a registration writes a slot.
    lock: AtomicBool,
    /// Number of written slots; only changed under `lock`.
    len: AtomicUsize,
    slots: [Slot; N],
}

// SAFETY: slots are written only under `lock` before their `ready` flag is published with
// Release; readers reach a slot only after an Acquire load of `true`. Published domains are
// only read through `&`, and `AllocationDomain` is `Send + Sync` (its counters are atomics;
// the assertion below keeps it so), so sharing across threads is sound.
unsafe impl<const N: usize> Sync for DomainRegistry<N> {}

/// The `Sync` impl above hands `&AllocationDomain` to any thread.
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<AllocationDomain>();
};

impl<const N: usize> core::fmt::Debug for DomainRegistry<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list()
            .entries(self.domains().map(|d| d.name()))
            .finish()
    }
}

impl<const N: usize> DomainRegistry<N> {
    /// An empty registry whose core domain uses the build's backend.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self {
            core: core_domain(),
            lock: AtomicBool::new(false),
            len: AtomicUsize::new(0),
            slots: [const { Slot::new() }; N],
        }
    }

    /// An empty registry whose core domain uses the build's backend.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self {
            core: core_domain(),
            lock: AtomicBool::new(false),
            len: AtomicUsize::new(0),
            slots: core::array::from_fn(|_| Slot::new()),
        }
    }

    /// The built-in core domain.
    pub fn core(&self) -> &AllocationDomain {
        &self.core
    }

    /// Named domains this registry can hold besides core.
    pub const fn capacity(&self) -> usize {
        N
    }

    /// Core, then every registered domain in registration order.
    pub fn domains(&self) -> impl Iterator<Item = &AllocationDomain> {
        core::iter::once(&self.core).chain(self.slots.iter().map_while(Slot::get))
    }

    /// Returns the domain named `name`, registering it with sharded counters on first use.
    ///
    /// # Errors
    /// As for [`register_with`](Self::register_with).
    pub fn register(&self, name: &str) -> Result<&AllocationDomain, RegisterError> {
        self.register_with(name, CounterMode::Sharded)
    }

    /// Returns the domain named `name`, registering it with counters in `mode` on first use.
    ///
    /// # Errors
    /// An invalid name; [`RegisterError::TagCollision`] if a different name holds the same
    /// tag; [`RegisterError::ModeMismatch`] if the name is registered in the other mode;
    /// [`RegisterError::RegistryFull`]. Nothing is registered on error.
    pub fn register_with(
        &self,
        name: &str,
        mode: CounterMode,
    ) -> Result<&AllocationDomain, RegisterError> {
        let name = DomainName::new(name)?;
        let tag = domain_tag(name.as_str());
        if let Some(found) = self.find(name, tag, mode) {
            return found;
        }
        self.acquire();
        let result = self.register_locked(name, tag, mode);
        self.lock.store(false, Ordering::Release);
        result
    }

    /// `Some` if `tag` is taken: by `name` in `mode` (`Ok`), otherwise `Err`.
    fn find(
        &self,
        name: DomainName,
        tag: u32,
        mode: CounterMode,
    ) -> Option<Result<&AllocationDomain, RegisterError>> {
        let d = self.domains().find(|d| d.tag() == tag)?;
        Some(if d.name() != name.as_str() {
            Err(RegisterError::TagCollision { tag })
        } else if d.counter_mode() != mode {
            Err(RegisterError::ModeMismatch {
                registered: d.counter_mode(),
            })
        } else {
            Ok(d)
        })
    }

    fn register_locked(
        &self,
        name: DomainName,
        tag: u32,
        mode: CounterMode,
    ) -> Result<&AllocationDomain, RegisterError> {
        if let Some(found) = self.find(name, tag, mode) {
            return found;
        }
        let len = self.len.load(Ordering::Relaxed);
        let Some(slot) = self.slots.get(len) else {
            return Err(RegisterError::RegistryFull { capacity: N });
        };
        // SAFETY: we hold `lock` and slot `len` is unpublished (`ready == false`), so no other
        // reference to its contents exists.
        let d = unsafe {
            (*slot.domain.get()).write(AllocationDomain::with_name(name, Backend::BUILD, mode))
        };
        slot.ready.store(true, Ordering::Release);
        self.len.store(len + 1, Ordering::Relaxed);
        Ok(d)
    }

    fn acquire(&self) {
        while self
            .lock
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            #[cfg(loom)]
            loom::thread::yield_now();
            #[cfg(not(loom))]
            std::thread::yield_now();
        }
    }
}

#[cfg(not(loom))]
impl<const N: usize> Default for DomainRegistry<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Drop for DomainRegistry<N> {
    fn drop(&mut self) {
        for slot in &mut self.slots {
            if slot.ready.load(Ordering::Acquire) {
                // SAFETY: `ready` means initialized; `&mut self` means no borrow remains.
                unsafe { slot.domain.get_mut().assume_init_drop() };
            }
        }
    }
}

#[cfg(not(loom))]
const fn core_domain() -> AllocationDomain {
    match DomainName::new(CORE_DOMAIN_NAME) {
        Ok(n) => AllocationDomain::with_name(n, Backend::BUILD, CounterMode::Sharded),
        Err(_) => panic!("invalid core domain name"),
    }
}

#[cfg(loom)]
fn core_domain() -> AllocationDomain {
    AllocationDomain::with_name(
        DomainName::new(CORE_DOMAIN_NAME).unwrap(),
        Backend::BUILD,
        CounterMode::Sharded,
    )
}

/// The process-wide registry.
#[cfg(not(loom))]
pub(crate) static PROCESS_DOMAINS: DomainRegistry<REGISTRY_CAPACITY> = DomainRegistry::new();

#[cfg(not(loom))]
impl AllocationDomain {
    /// The built-in core domain: always available, no registration, no lazy allocation.
    pub fn core() -> &'static AllocationDomain {
        PROCESS_DOMAINS.core()
    }

    /// Returns the process domain named `name`, registering it on first use. Registering an
    /// identical name again returns the same domain.
    ///
    /// # Examples
    /// ```
    /// use ludus::memory::AllocationDomain;
    /// let a = AllocationDomain::register("doc/example").unwrap();
    /// let b = AllocationDomain::register("doc/example").unwrap();
    /// assert!(std::ptr::eq(a, b));
    /// assert!(std::ptr::eq(AllocationDomain::register("core").unwrap(), AllocationDomain::core()));
    /// ```
    ///
    /// # Errors
    /// See [`DomainRegistry::register`].
    pub fn register(name: &str) -> Result<&'static AllocationDomain, RegisterError> {
        PROCESS_DOMAINS.register(name)
    }

    /// As [`register`](Self::register), with counters in `mode` (the core domain is sharded).
    ///
    /// # Errors
    /// See [`DomainRegistry::register_with`].
    pub fn register_with(
        name: &str,
        mode: CounterMode,
    ) -> Result<&'static AllocationDomain, RegisterError> {
        PROCESS_DOMAINS.register_with(name, mode)
    }

    /// Every process domain: core first, then registration order.
    pub fn all() -> impl Iterator<Item = &'static AllocationDomain> {
        PROCESS_DOMAINS.domains()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Two distinct valid names with equal FNV-1a tags (found once by a birthday search).
    const COLLIDING: (&str, &str) = ("c8906", "cc10a0");

    #[test]
    fn identical_name_returns_same_domain() {
        let r = DomainRegistry::<4>::new();
        let a = r.register("render").unwrap();
        let b = r.register("render").unwrap();
        assert!(core::ptr::eq(a, b));
        assert_eq!(a.tag(), domain_tag("render"));
        assert!(core::ptr::eq(r.register("core").unwrap(), r.core()));
        assert_eq!(r.domains().count(), 2);
    }

    #[test]
    fn colliding_name_is_rejected_and_registers_nothing() {
        let (a, b) = COLLIDING;
        assert_eq!(domain_tag(a), domain_tag(b));
        let r = DomainRegistry::<4>::new();
        r.register(a).unwrap();
        assert_eq!(
            r.register(b).unwrap_err(),
            RegisterError::TagCollision { tag: domain_tag(a) }
        );
        assert_eq!(r.domains().count(), 2);
    }

    #[test]
    fn full_registry_is_a_typed_error() {
        let r = DomainRegistry::<2>::new();
        r.register("a").unwrap();
        r.register("b").unwrap();
        assert_eq!(
            r.register("c").unwrap_err(),
            RegisterError::RegistryFull { capacity: 2 }
        );
        assert_eq!(
            r.register_with("a", CounterMode::Exact).unwrap_err(),
            RegisterError::ModeMismatch {
                registered: CounterMode::Sharded
            }
        );
        // Existing names still resolve when full.
        assert!(r.register("a").is_ok());
        assert_eq!(r.register("").unwrap_err(), RegisterError::EmptyName);
    }
}
