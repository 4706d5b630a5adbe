package telegram

import (
	"net/http"
	"strconv"
	"testing"

	"shelldon/contracts"
	"shelldon/transports/telegram/telegramtest"
)

func (r *rig) draft(t *testing.T, chat int64, turn, text string) {
	t.Helper()
	r.route(t, contracts.KindReplyDraft, contracts.Draft{Chat: strconv.FormatInt(chat, 10), Turn: turn, Text: text})
}

// waitDrafts waits until chat shows n drafts.
func (r *rig) waitDrafts(t *testing.T, chat int64, n int) []telegramtest.Draft {
	t.Helper()
	eventually(t, strconv.Itoa(n)+" drafts", func() bool { return len(r.api.Drafts(chat)) >= n })
	return r.api.Drafts(chat)
}

// TestADraftGrowsInTheOwnersChat: a turn's drafts stream into the owner's
// chat under one id of the turn's, made safe as a reply is, at most one
// each draftEvery (one that comes sooner is dropped: the next carries its
// text), and the reply is still a message of its own.
func TestADraftGrowsInTheOwnersChat(t *testing.T) {
	r, clk := statusRig(t)
	r.draft(t, owner, "t1", "It <is>")
	first := r.waitDrafts(t, owner, 1)
	r.draft(t, owner, "t1", "It <is> sun")
	r.barrier(t, 1)
	if got := r.api.Drafts(owner); len(got) != 1 {
		t.Errorf("drafts within %v of the last = %v, want the first alone", draftEvery, got)
	}
	clk.Advance(draftEvery)
	r.draft(t, owner, "t1", "It <is> sunny")
	got := r.waitDrafts(t, owner, 2)
	if first[0].ID == 0 || got[1].ID != first[0].ID || got[1].Text != "It <is> sunny" || first[0].Text != "It <is>" {
		t.Errorf("drafts = %+v, want the text as written, growing, under one non-zero id", got)
	}
	r.reply(t, owner, "It is sunny.")
	r.api.WaitMessage(t, owner, hasText("It is sunny."))

	r.draft(t, owner, "t2", "Next")
	if got := r.waitDrafts(t, owner, 3); got[2].ID == got[1].ID {
		t.Errorf("the next turn's draft has the id %d of the last turn's", got[2].ID)
	}
}

// TestDraftsStopWhereTheServerLacksThem: a Bot API server without
// sendMessageDraft is asked once; the replies go as before.
func TestDraftsStopWhereTheServerLacksThem(t *testing.T) {
	r, clk := statusRig(t)
	r.api.Fail(telegramtest.Fault{Method: "sendMessageDraft", Status: http.StatusNotFound})
	r.draft(t, owner, "t1", "It")
	eventually(t, "drafts given up", r.tr.drafts.unsupported.Load)
	clk.Advance(draftEvery)
	r.draft(t, owner, "t1", "It is")
	r.reply(t, owner, "It is sunny.")
	r.api.WaitMessage(t, owner, hasText("It is sunny."))
	if n := len(r.api.Calls("sendMessageDraft")); n != 1 {
		t.Errorf("%d draft calls to a server without the method, want 1", n)
	}
}

// TestNoDraftIntoAGroup: a draft is for a private chat; a group's
// turn shows its reply when whole.
func TestNoDraftIntoAGroup(t *testing.T) {
	r, _ := statusRig(t)
	r.draft(t, -100, "t1", "It")
	r.barrier(t, 1)
	r.tr.drafts.wg.Wait() // a draft call started before the barrier has ended
	if n := len(r.api.Calls("sendMessageDraft")); n != 0 {
		t.Errorf("%d draft calls for a group chat, want none", n)
	}
}
