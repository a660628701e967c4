//! Who a request comes from. The local user (stdio, the CLI) owns the whole store and stands at
//! the inferred scope. The holder of an API key (the HTTP server) stands at the scope its key
//! and headers give, and may not leave the key's tenant bound: the service it is served by sees
//! the store through [`crate::tenant::BoundedStore`], where nothing outside the bound exists.

use crate::MemoryService;
use crate::tenant::BoundedStore;
use cortex_domain::Scope;
use cortex_domain::tenant::Bound;
use cortex_store::TenantStore;
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
        Caller { scope: self.shared.inferred.scope.clone(), bound: None, actor: None }
    }

    /// This service as `caller` is served: standing at the caller's scope and, for a key's
    /// holder, seeing only what the bound admits. Cheap (the shared parts are one
    /// reference-counted whole); made once per request.
    pub fn for_caller(&self, caller: &Caller) -> MemoryService {
        let view: Arc<dyn TenantStore> = match &caller.bound {
            Some(bound) => Arc::new(BoundedStore::new(self.shared.store.clone(), bound.clone())),
            None => self.shared.store.clone(),
        };
        let mut inferred = self.shared.inferred.clone();
        inferred.scope = caller.scope.clone();
        MemoryService {
            shared: self.shared.clone(),
            view,
            inferred,
            bound: caller.bound.clone(),
            actor: caller.actor.clone(),
        }
    }
}
