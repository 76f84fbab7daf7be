// Package etcdcoord runs brokerpath's failover decision on etcd, for
// deployments in which more than one process can trade one broker account.
//
// # Start here
//
// A single-process deployment needs none of this: pathdialer decides
// locally. When several processes trade one account, monitors run an
// Observer each, a few processes run a Decider (one is elected), and every
// trading process builds its Path with ExternalDecisions and runs a
// Follower:
//
//	cfg := pathdialer.DefaultConfig()
//	cfg.Endpoints = accountEndpoints
//	cfg.Probe = probeOrders
//	cfg.Fencer, cfg.Reconcile = pathdialer.LocalFenceOnly, reconcileOrders
//	cfg.ExternalDecisions = true // the elected Decider makes the switches
//	path, err := pathdialer.New(cfg)
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer path.Close()
//	if err := path.Start(ctx); err != nil {
//		log.Fatal(err)
//	}
//	fc := etcdcoord.DefaultFollowerConfig()
//	fc.Client, fc.Prefix, fc.Name, fc.Target = cli, "/brokerpath/acct-1/", "trader-us", path
//	f, err := etcdcoord.NewFollower(fc)
//	if err != nil {
//		log.Fatal(err)
//	}
//	if err := f.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
//		log.Fatal(err)
//	}
//
// The package Example is this process whole; ExampleNewObserver and
// ExampleNewDecider show the other two roles. Give each process etcd
// credentials for its own keys only (the module's README lists the roles).
//
// # Roles
//
// One process deciding alone cannot tell two things apart: a partition between
// a monitor and a region looks exactly like the region dying, and two trading
// processes that decide separately can put two live paths in front of one
// account. This package splits the decision in three roles:
//
//   - Observers (monitors in several regions) publish their probe results,
//     each under its own lease, so a dead or stalled monitor's opinion expires
//     with its lease.
//   - One Decider, elected with the keys of etcd's concurrency election, aggregates the
//     live observations by quorum (Aggregate), runs an engine.Manager on that
//     view, and writes the account's Assignment to one key with a transaction
//     that only the current leader can commit.
//   - Followers (trading processes) watch that key. The etcd revision of the
//     write that made an endpoint active is the fencing token: a follower
//     grants tickets only under the current token, acknowledges every
//     Assignment it has applied, and holds or halts submissions as soon as it
//     cannot prove its etcd session is alive.
//
// # What it guarantees
//
//   - An endpoint is Down for the decision only when Quorum live observers
//     say it is Down, and a failover target only when Quorum live observers
//     see it Healthy with a fresh success. A single monitor cut off from one
//     region changes nothing. Fewer than Quorum live observers is not evidence
//     of anything: the decider feeds the engine nothing, and the engine
//     reports the staleness without acting on it.
//   - Only the elected decider can change the Assignment: every write is a
//     Txn guarded by the decider's election key (its create revision) and by
//     the Assignment's mod revision it last read. A deposed decider's write
//     fails and it stops deciding. Each record names the write that carries
//     it (the key's create revision and the version the write gives it), so
//     the decider's records written again by anyone else, at once or later,
//     are refused (see "Who may write what" for what remains).
//   - A switch is two writes. The decider first writes PhaseFencing (every
//     follower holds submissions and fences the old endpoint locally, then
//     acknowledges). Only when every follower with a live session has
//     acknowledged that token (or its lease has expired, which removes its
//     acknowledgement key) does it write PhaseActive for the new endpoint.
//     So no follower is still granting on the old endpoint when any follower
//     is granted on the new one. A follower's session is its key under
//     <prefix>followers/ attached to a live lease granted at most
//     DeciderConfig.FollowerMaxTTL (set it to at least every follower's
//     TTL): a key without a lease or under a longer one is reported and not
//     waited for, and a key whose lease nobody renews any more delays a
//     switch by at most FollowerMaxTTL. (etcd cannot tell a follower's
//     lease from another live process's: a key written under, say, an
//     observer's lease is waited for while that lease lives.)
//   - A follower computes its own session deadline from the time it SENT the
//     last successful keep-alive plus the TTL granted, minus a safety margin
//     (FollowerConfig.Margin): that is before the server can expire its lease
//     (and remove its acknowledgement). It gives that deadline to
//     Target.Extend after every keep-alive (and a past instant when the
//     session ends), so the Path refuses tickets once it has passed and every
//     ticket carries it as Ticket.ValidUntil, which the transports check
//     right before an order is written: a process paused past its lease does
//     not write on the stale decision, without waiting for any goroutine to
//     notice. At that deadline the follower also holds or halts, even with no
//     network at all.
//   - One etcd member that stops answering while its connections stay open
//     (a stopped process, a stalled disk, a hung VM) neither halts a follower
//     nor ends the decider's term while the others keep quorum. clientv3
//     balances calls round-robin over the members and keeps such a member's
//     connection in the rotation until gRPC's keepalive closes it (10 s at
//     the soonest), so every call here has a short timeout of its own (a 25th
//     of the lease at first, at least 50 ms, doubling to four times that) and
//     one that timed out is made again at once, on the next member, until the
//     lease's deadline. Watches ask the member for progress every tenth of
//     the lease and are replaced on a new stream, after a fresh read, when two
//     such intervals pass without an answer. The decider keeps its election
//     lease itself the same way, and a call that timed out while that lease is
//     provably alive is made again in the next round instead of ending the
//     term.
//   - The token reaches the broker: Ticket.Token is the token, and
//     transports/rest (Options.TokenHeader) and transports/fix
//     (Options.TokenTag) write it into every order, so a broker or gateway
//     that checks tokens refuses a write that left before the deadline and
//     landed after a newer one.
//   - A process that starts following, or follows again after losing its
//     session, releases flow only through reconciliation: its Path calls the
//     Reconcile hook (with Config.ReconcileByService, every service's
//     function) even with no ticket of its own, and grants nothing before it
//     succeeded. The Path knows nothing of the orders another process left in
//     flight when it stopped: look them up in that hook (the broker's lookups
//     or open-order list, by the IDs in a journal the processes share), so no
//     order of this process reaches the broker before they are settled.
//
// # Records that cannot be acted on
//
// Every record is checked before it is acted on: an assignment must decode
// (at most 64 KiB), name valid endpoints and its writer, be the decider's own
// write of the key (Assignment.Created and Assignment.Version equal the key's
// create revision and version at the record's revision: a copy or a replay of
// a genuine record lands at another version; a record that created the key
// may fence or halt but not release flow, since after a delete it could be
// replayed onto a new key), and its writer (Assignment.Term and
// Assignment.Lease, the decider's election key) must have led the election at
// the record's revision; an observation must decode and name the observer and
// endpoint of its key. A refused record is reported once per version
// (FollowerConfig.OnBadRecord, DeciderConfig.OnBadRecord,
// Decider.BadRecords, an ERROR or WARN log line) and never acted on (a
// follower holds on a fence or a halt as soon as its watch delivers it,
// before that proof: a hold grants nothing):
//
//   - A follower holds submissions at once (State.Refused says why) until an
//     assignment it can accept replaces it, and acknowledges the refusal at
//     once (Ack.Phase PhaseRefused). A hold grants nothing, as a halt does;
//     a refused record is no decision, so it is not a reason to halt. Losing
//     the session still halts.
//   - The leading decider re-reads the assignment every Interval. Any
//     revision it did not write (undecodable, deleted, or well-formed but
//     written by another client) and any follower's refusal of the record in
//     force is overwritten with a fence from the endpoint its engine has
//     active (Assignment.Reason starts "repair: "); the switch then proceeds
//     as usual once every live follower has acknowledged the fence. Repairs
//     back off (Interval, doubling up to TTL); the decider keeps its
//     leadership throughout.
//   - A refused observation does not count: it is as if that observer had
//     not published.
//
// When etcd has compacted the history at an assignment's revision, its
// writer can only be proven while it still leads: a new leader that cannot
// prove the record it finds overwrites it with a fence (traders hold for one
// round of acknowledgements).
//
// # Who may write what
//
// The checks above refuse a record that copies or replays the decider's, and
// one naming a decider that did not lead at its revision. They cannot refuse
// a record composed by a client that can read the keys and write the
// assignment key: it can name the leading decider and the key's next version
// (the leader overwrites it at its next check, but followers act on it
// until then). Against such a client the barrier is etcd's authentication: run etcd
// with it and give each role only its keys (the README has the etcdctl
// commands):
//
//	decider   read <prefix> (all), write <prefix>assignment and <prefix>election/
//	observer  write <prefix>observations/<its name>/ only
//	trader    read <prefix>assignment and <prefix>election/, write <prefix>followers/<its name> only
//
// A trader or observer credential cannot write the assignment (etcd answers
// permission denied). The record checks back this up for a client that
// writes around the decider without composing records: it is refused by
// followers and overwritten by the leader.
//
// # Size
//
// The 64 KiB record limit protects the decoders, not etcd: etcd accepts any
// request up to its --max-request-bytes (1.5 MiB by default) and sends a write
// to every watcher of the key, so one large write on the assignment key costs
// its size times the number of followers. Followers hold on it and the leader
// overwrites it; the decider's checks and the followers' periodic reads do not
// fetch it again, and a follower that reads it rather than receives it on its
// watch (a session that starts while it is in place) learns that it is too
// large without receiving it, once per revision; so does a decider that takes
// office while it is in place, which then overwrites it with a fence. Bound the fan-out in the
// cluster: the module's README gives the setting.
//
// # Key layout
//
// Every key lives under Config.Prefix (for example "/brokerpath/acct-1/"):
//
//	<prefix>observations/<observer>/<endpoint>  Observation (JSON), under the observer's lease
//	<prefix>election/<lease id>                 concurrency.Election candidates (the leader is the
//	                                            oldest key)
//	<prefix>assignment                          Assignment (JSON), written by the leader only; its
//	                                            ModRevision is the token
//	<prefix>followers/<follower>                Ack (JSON), under the follower's lease (a key
//	                                            without a lease is reported, not waited for)
package etcdcoord
