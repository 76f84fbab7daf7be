#!/bin/sh
# rename33.sh: the renames of issue 33 §2, re-runnable (idempotent) over the
# whole repository, including the coord/etcd and bench modules. Run from the
# repository root after merging a branch cut before the renames:
#
#	sh scripts/rename33.sh && gofmt -l . && go build ./... && go vet ./...
#
# Identifiers are renamed everywhere (code, comments, Markdown, the plant
# defects' code text). Prose ("generation" -> "token") only in the public
# packages and the Markdown docs. Quoted "generation" (JSON field names,
# metric names, log keys) is left as it is: those are stable output formats.
set -eu
cd "$(git rev-parse --show-toplevel)"

files=$(git ls-files '*.go' '*.md' | grep -v '^scripts/rename33.sh$')
pubprose=$(git ls-files '*.go' '*.md' | grep -E '^(pathdialer|engine|transports|observe|venue|coord/etcd)/|^[^/]*\.md$|^[a-z]+/[^/]*\.md$' | grep -v '/cmd/' || true)

# 1. One idea, two ways: the broker enforces the fence.
#    engine.Config.BrokerFences  -> BrokerFencesAtLogon  (no fence step: the new
#                                                          logon fences the old session)
#    pathdialer.Config.FenceAtBroker -> BrokerFencesViaFencer (the Fencer's nil
#                                                          return is the broker's fence)
# 2. Reconciliation: the Config fields are functions, named by what they do;
#    rest.Reconciler / fix.Reconciler stay the types that implement them.
#    pathdialer.Config.Reconciler  -> Reconcile
#    pathdialer.Config.Reconcilers -> ReconcileByService
#    rest.Reconciler.Bind          -> SendLookupsVia
# 3. "generation", which is the fencing token -> Token.
perl -pi -e '
	s/\bBrokerFences\b/BrokerFencesAtLogon/g;
	s/\bFenceAtBroker\b/BrokerFencesViaFencer/g;
	s/\bReconcilers\b/ReconcileByService/g;
	s/ReconcileByService for the shipped venue profiles/Reconcilers for the shipped venue profiles/g;
	s/(?<!rest)(?<!fix)(?<![^A-Za-z]o)(?<!opts)(?<!Options)\.Reconciler = (\S+)( {2,})/.Reconcile = $1$2 /g; # aligned code in doc comments
	s/(?<!rest)(?<!fix)(?<![^A-Za-z]o)(?<!opts)(?<!Options)\.Reconciler\b/.Reconcile/g;
	s/^(\s*)Reconciler(\s+ReconcileFunc)/$1Reconcile$2/;
	s/\bReconciler:(\s*)(pathdialer\.NoReconcile|NoReconcile|[A-Za-z_.]*\.Reconcile\b|pathdialer\.ReconcileAll|ReconcileAll|func\()/Reconcile:$1$2/g;
	s/\b(restRec|rec|r)\.Bind\(/$1.SendLookupsVia(/g;
	s/\bErrStaleGeneration\b/ErrStaleToken/g;
	s/(?<!")\bGeneration\b/Token/g;
' $files

# Reconciler.Bind declaration and its own doc.
perl -pi -e 's/\bReconciler\.Bind\b/Reconciler.SendLookupsVia/g; s/\(see Bind\)/(see SendLookupsVia)/g; s/strings\.Contains\(err\.Error\(\), "Bind"\)/strings.Contains(err.Error(), "SendLookupsVia")/g' $(git ls-files 'transports/rest/*.go')
perl -pi -e 's/^\/\/ Bind sets/\/\/ SendLookupsVia sets/; s/^func \(r \*Reconciler\) Bind\(/func (r *Reconciler) SendLookupsVia(/' transports/rest/reconcile.go

# In pathdialer, a bare "Reconciler" is the Config field.
perl -pi -e '
	s/\b([Tt])he Reconciler\b/$1he reconcile function/g;
	s/\bWith one Reconciler,/With Config.Reconcile alone,/g;
	s/\bone Reconciler\b/one Reconcile function/g;
	s/(?<![.\w])Reconciler\b/Reconcile/g;
' $(git ls-files 'pathdialer/*.go')

# Prose in the public packages and docs.
perl -pi -e '
	s/"generation", (\w+)\.Token\b/"token", $1.Token/g;
	s/(?<!")\bgenerations\b/tokens/g;
	s/(?<!")\bgeneration\b/token/g;
	s/engine: stale token/engine: stale fencing token/g;
	s/json:"generation"/json:"token"/g;
' $pubprose

# 4. Exported identifiers nothing outside their package needs.
perl -pi -e 's/\bIsSensitiveName\b/isSensitiveName/g' $(git ls-files 'transports/rest/*.go')
perl -pi -e 's/(?<![.\w])Redact\(/redact(/g' $(git ls-files 'transports/ws/*.go')
perl -pi -e 's/\bDedupCovers\b/dedupCovers/g' $(git ls-files 'venue/*.go')
perl -pi -e 's/BuildFQName\(Namespace,/BuildFQName(namespace,/g; s/Namespace: Namespace,/Namespace: namespace,/g; s/^const Namespace =/const namespace =/' $(git ls-files 'observe/metrics/*.go')
perl -pi -e 's/\.FenceChoice\(\)/.Snapshot().Fence/g' $files

gofmt -w $(git ls-files '*.go') >/dev/null
