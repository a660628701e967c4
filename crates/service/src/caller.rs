//! Who a request comes from. The local user (stdio, the CLI) owns the whole store and stands at
//! the inferred scope. The holder of an API key (the HTTP server) stands at the scope its key
//! and headers give, and may not leave the key's tenant bound: the service it is served by sees
//! the store through [`crate::tenant::BoundedStore`], where nothing outside the bound exists.

use crate::MemoryService;
use crate::tenant::BoundedStore;
use cortex_domain::Scope;
use cortex_domain::principal::Principal;
use cortex_domain::tenant::{Bound, ProjectOutsideBound};
use cortex_store::{TenantStore, WriteContext};
use std::sync::Arc;
use uuid::Uuid;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// Where the caller stands: fills what a request's scope leaves out.
    pub scope: Scope,
    /// `None`: the local user, who may reach every item.
    pub bound: Option<Bound>,
    /// Who the audit trail records as making the caller's changes, as the server established
    /// it (the key, the token's subject, the local user), whatever an item's `source` claims;
    /// `None` records none.
    pub principal: Option<Principal>,
    /// What the caller's changes come through, when not the flow's own name (`web UI`).
    pub via: Option<&'static str>,
}

impl Caller {
    /// The holder of a key (or a token) bound to `bound`, standing at the project and branch its request
    /// headers name (`X-Cortex-Project`, `X-Cortex-Branch`), else the key's defaults
    /// ([`Bound::default_scope`]). `Err` says why a header is refused. Its principal is the
    /// gate's to name ([`Caller::as_principal`]).
    pub fn for_key(
        bound: Bound,
        project: Option<&str>,
        branch: Option<&str>,
    ) -> Result<Caller, ProjectOutsideBound> {
        let scope = bound.default_scope(project, branch)?;
        Ok(Caller { scope, bound: Some(bound), principal: None, via: None })
    }

    /// This caller, its changes recorded as `principal`'s.
    pub fn as_principal(self, principal: Principal) -> Caller {
        Caller { principal: Some(principal), ..self }
    }
}

impl MemoryService {
    /// The local user: the inferred scope, no bound, the service's own principal (the
    /// operating-system user that opened it).
    pub fn local_caller(&self) -> Caller {
        Caller {
            scope: self.shared.inferred.scope.clone(),
            bound: None,
            principal: self.principal.clone(),
            via: None,
        }
    }

    /// The audit context of one write of this caller's: a new request id, the caller's
    /// principal, and what it came through (`via`, unless the caller says otherwise).
    pub(crate) fn write_context(&self, via: &str) -> WriteContext {
        WriteContext {
            request_id: Some(Uuid::now_v7().to_string()),
            principal: self.principal.as_ref().map(ToString::to_string),
            via: Some(self.via.unwrap_or(via).to_string()),
            ..WriteContext::default()
        }
    }

    /// This service with its writes recorded as coming through `via` (`cortex ingest`'s
    /// stores go through the `memory_store` flow, and say they came from ingest).
    pub(crate) fn through(&self, via: &'static str) -> MemoryService {
        MemoryService {
            shared: self.shared.clone(),
            view: self.view.clone(),
            inferred: self.inferred.clone(),
            bound: self.bound.clone(),
            principal: self.principal.clone(),
            via: Some(via),
        }
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
            principal: caller.principal.clone(),
            via: caller.via,
        }
    }
}
