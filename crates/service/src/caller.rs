//! Who a request comes from. The local user (stdio, the CLI) owns the whole store and stands at
//! the inferred scope. The holder of an API key (the HTTP server) stands at the scope its key
//! and headers give, and may not leave the key's tenant bound: the service it is served by sees
//! the store through [`crate::tenant::BoundedStore`], where nothing outside the bound exists.

use crate::MemoryService;
use crate::tenant::BoundedStore;
use cortex_domain::Scope;
use cortex_domain::tenant::Bound;
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// Where the caller stands: fills what a request's scope leaves out.
    pub scope: Scope,
    /// `None`: the local user, who may reach every item.
    pub bound: Option<Bound>,
    /// Who the audit trail records as making the caller's changes, when the item names no
    /// actor of its own (an OAuth token's subject and client); `None` records none.
    pub actor: Option<String>,
}

impl Caller {
    /// The holder of a key (or a token) bound to `bound`, standing at the project and branch its request
    /// headers name (`X-Cortex-Project`, `X-Cortex-Branch`), else the key's defaults
    /// ([`Bound::default_scope`]). `Err` says why a header is refused.
    pub fn for_key(bound: Bound, project: Option<&str>, branch: Option<&str>) -> Result<Caller, String> {
        let scope = bound.default_scope(project, branch)?;
        Ok(Caller { scope, bound: Some(bound), actor: None })
    }
}

impl MemoryService {
    /// The local user: the inferred scope, no bound.
    pub fn local_caller(&self) -> Caller {
        Caller { scope: self.inferred.scope.clone(), bound: None, actor: None }
    }

    /// This service as `caller` is served: standing at the caller's scope and, for a key's
    /// holder, seeing only what the bound admits. Cheap (shared parts are reference-counted);
    /// made once per request.
    pub fn for_caller(&self, caller: &Caller) -> MemoryService {
        let store = match &caller.bound {
            Some(bound) => Arc::new(BoundedStore::new(self.store.clone(), bound.clone())) as Arc<_>,
            None => self.store.clone(),
        };
        let mut inferred = self.inferred.clone();
        inferred.scope = caller.scope.clone();
        MemoryService {
            store,
            inferred,
            db_label: self.db_label.clone(),
            semantic: self.semantic.clone(),
            lexical: self.lexical.clone(),
            near_duplicate_policy: self.near_duplicate_policy,
            find_deadline: self.find_deadline,
            bound: caller.bound.clone(),
            actor: caller.actor.clone(),
            write_lanes: self.write_lanes.clone(),
            refusals: self.refusals.clone(),
        }
    }
}

impl MemoryService {
    /// A lane for one store call of this caller's tenant (its org; the local user is one
    /// tenant too), waiting for one if need be: see [`crate::lanes`].
    pub(crate) fn write_lane(&self) -> crate::lanes::Lane {
        self.write_lanes.take(self.bound.as_ref().map_or("", |b| b.org.as_str()))
    }

    /// What the store calls are doing with their lanes now.
    pub fn write_load(&self) -> crate::lanes::LaneLoad {
        self.write_lanes.load()
    }
}
