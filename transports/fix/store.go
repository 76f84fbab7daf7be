package fix

import (
	"sync"
	"time"

	"github.com/quickfixgo/quickfix"
)

// lockedStoreFactory wraps the user's store factory so every store is safe for
// concurrent use. quickfix v0.9.10 reads the store while answering a
// ResendRequest (under its resend lock) while SendToTarget writes it (under its
// send lock only); with the in-memory store that is a data race, and this
// package sends (orders, status requests) exactly while a new region asks for
// resends.
type lockedStoreFactory struct{ inner quickfix.MessageStoreFactory }

func (f lockedStoreFactory) Create(sid quickfix.SessionID) (quickfix.MessageStore, error) {
	s, err := f.inner.Create(sid)
	if err != nil {
		return nil, err
	}
	return &lockedStore{inner: s}, nil
}

type lockedStore struct {
	mu    sync.Mutex
	inner quickfix.MessageStore
}

var _ quickfix.MessageStore = (*lockedStore)(nil)

func (s *lockedStore) NextSenderMsgSeqNum() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inner.NextSenderMsgSeqNum()
}

func (s *lockedStore) NextTargetMsgSeqNum() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inner.NextTargetMsgSeqNum()
}

func (s *lockedStore) IncrNextSenderMsgSeqNum() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inner.IncrNextSenderMsgSeqNum()
}

func (s *lockedStore) IncrNextTargetMsgSeqNum() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inner.IncrNextTargetMsgSeqNum()
}

func (s *lockedStore) SetNextSenderMsgSeqNum(next int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inner.SetNextSenderMsgSeqNum(next)
}

func (s *lockedStore) SetNextTargetMsgSeqNum(next int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inner.SetNextTargetMsgSeqNum(next)
}

func (s *lockedStore) CreationTime() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inner.CreationTime()
}

func (s *lockedStore) SetCreationTime(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inner.SetCreationTime(t)
}

func (s *lockedStore) SaveMessage(seqNum int, msg []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inner.SaveMessage(seqNum, msg)
}

func (s *lockedStore) SaveMessageAndIncrNextSenderMsgSeqNum(seqNum int, msg []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inner.SaveMessageAndIncrNextSenderMsgSeqNum(seqNum, msg)
}

func (s *lockedStore) GetMessages(begin, end int) ([][]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inner.GetMessages(begin, end)
}

// IterateMessages reads the range under the lock and calls cb outside it (cb
// sends, which touches the store again).
func (s *lockedStore) IterateMessages(begin, end int, cb func([]byte) error) error {
	msgs, err := s.GetMessages(begin, end)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if err := cb(m); err != nil {
			return err
		}
	}
	return nil
}

func (s *lockedStore) Refresh() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inner.Refresh()
}

func (s *lockedStore) Reset() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inner.Reset()
}

func (s *lockedStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inner.Close()
}
