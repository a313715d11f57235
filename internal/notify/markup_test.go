package notify

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/cadence-dev/cadence/internal/checkpoint"
	"github.com/cadence-dev/cadence/internal/workflow"
)

// TestTextFormatOfTarget: a webhook on Slack's, Discord's or Teams' hosts
// gets its service's escaping; any other webhook and a command get the
// chat escaping.
func TestTextFormatOfTarget(t *testing.T) {
	tests := []struct{ webhook, want string }{
		{"https://hooks.slack.com/services/T000/B000/secret", formatSlack},
		{"https://HOOKS.SLACK.COM/services/T000/B000/secret", formatSlack},
		{"https://discord.com/api/webhooks/1/abc", formatDiscord},
		{"https://canary.discordapp.com/api/webhooks/1/abc/slack", formatDiscord},
		{"https://contoso.webhook.office.com/webhookb2/x/IncomingWebhook/y/z", formatTeams},
		{"https://outlook.office.com/webhook/x", formatTeams},
		{"https://prod-01.westus.logic.azure.com:443/workflows/x/triggers/manual/paths/invoke", formatTeams},
		{"https://hooks.example.com/services/T000/B000/secret", formatChat},
		{"https://slack.com.evil.example/hook", formatChat},
		{"https://notslack.com/hook", formatChat},
		{"", formatChat}, // a command
		{"://not a url", formatChat},
	}
	for _, tt := range tests {
		if got := textFormat(tt.webhook); got != tt.want {
			t.Errorf("textFormat(%q) = %q, want %q", tt.webhook, got, tt.want)
		}
	}
}

// TestEscapeText: hostile text (mentions, links, markdown, entities) is
// shown as written in each format and pings nobody.
func TestEscapeText(t *testing.T) {
	const branch = "<!channel> <https://evil.example|click> & @here"
	tests := []struct {
		name, format, text, want string
	}{
		{"slack: broadcast and link", formatSlack, branch, "&lt;!channel&gt; &lt;https://evil.example|click&gt; &amp; @here"},
		{"slack: user mention", formatSlack, "ask <@U024BE7LH> or <!subteam^SAZ94GDB8>", "ask &lt;@U024BE7LH&gt; or &lt;!subteam^SAZ94GDB8&gt;"},
		{"slack: entity written by the agent", formatSlack, "&lt;!here&gt;", "&amp;lt;!here&amp;gt;"},
		{"slack: plain text unchanged", formatSlack, "run r1 of nightly failed at step plan: exit 1", "run r1 of nightly failed at step plan: exit 1"},
		{"discord: everyone and here", formatDiscord, "@everyone look, @HERE too", "@\u200beveryone look, @\u200bHERE too"},
		{"discord: angle mentions", formatDiscord, "<@123> <@&456> <#789> <:pwn:1> <t:0>", "<\u200b@123\\> <\u200b@&456\\> <\u200b\\#789\\> <\u200b:pwn:1\\> <\u200bt:0\\>"},
		{"discord: markdown", formatDiscord, "**bold** _it_ ~~s~~ `code` ||spoiler|| > quote # h [x](https://e.example) a\\b",
			"\\*\\*bold\\*\\* \\_it\\_ \\~\\~s\\~\\~ \\`code\\` \\|\\|spoiler\\|\\| \\> quote \\# h \\[x\\](https://e.example) a\\\\b"},
		{"discord: slack markup", formatDiscord, branch, "<\u200b!channel\\> <\u200bhttps://evil.example\\|click\\> & @\u200bhere"},
		{"teams: html and markdown", formatTeams, "<at>All</at> <a href=x>y</a> **b** [l](u) & `c`",
			"&lt;at&gt;All&lt;/at&gt; &lt;a href=x&gt;y&lt;/a&gt; \\*\\*b\\*\\* \\[l\\](u) &amp; \\`c\\`"},
		{"teams: backslash first", formatTeams, `a\*b`, `a\\\*b`},
		{"chat: slack escaping and broadcast words", formatChat, branch + " @channel @all @everyone",
			"&lt;!channel&gt; &lt;https://evil.example|click&gt; &amp; @\u200bhere @\u200bchannel @\u200ball @\u200beveryone"},
		{"chat: an address is not a broadcast", formatChat, "mail ops@here.example or @hereafter", "mail ops@\u200bhere.example or @hereafter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := escapeText(tt.format, tt.text); got != tt.want {
				t.Errorf("escapeText(%s, %q)\n got %q\nwant %q", tt.format, tt.text, got, tt.want)
			}
		})
	}
}

// TestDeliveredTextIsEscaped: an event whose text quotes a hostile branch
// name reaches a Slack webhook (a real HTTP server on loopback, reached
// under Slack's host name) and another webhook with its text escaped for
// each, and with the raw value in the structured fields.
func TestDeliveredTextIsEscaped(t *testing.T) {
	h := newHook(t)
	s := newState(t)
	wf := &workflow.Workflow{Name: "w", Notify: []*workflow.NotifyTarget{
		{Webhook: "http://hooks.slack.com/services/T000/B000/secret", On: []string{workflow.EventItemDead}},
		{Webhook: h.srv.URL + "/other", On: []string{workflow.EventItemDead}},
	}}
	key := "<!channel> <https://evil.example|fix> @here"
	enqueue(t, s, wf, Event{Name: workflow.EventItemDead, RunID: "r1", Step: "fix", Item: key, At: time.Now(),
		Text: "item " + key + " of step fix was dead-lettered", Error: "schema: " + key})
	// Every connection goes to the loopback receiver, whatever the host.
	addr := h.srv.Listener.Addr().String()
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}}
	d := &Deliverer{Store: s, Client: client, Tries: 1}
	if _, err := d.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := h.received()
	if len(got) != 2 {
		t.Fatalf("received %d requests, want 2", len(got))
	}
	want := map[string]string{
		"/services/T000/B000/secret": "item &lt;!channel&gt; &lt;https://evil.example|fix&gt; @here of step fix was dead-lettered",
		"/other":                     "item &lt;!channel&gt; &lt;https://evil.example|fix&gt; @\u200bhere of step fix was dead-lettered",
	}
	for i, r := range got {
		if r.body.Text != want[r.path] {
			t.Errorf("request %d to %s: text %q, want %q", i, r.path, r.body.Text, want[r.path])
		}
		if r.body.Item != key || r.body.Error != "schema: "+key {
			t.Errorf("request %d: item %q, error %q; want the raw values", i, r.body.Item, r.body.Error)
		}
	}
	for _, r := range deliveries(t, s) {
		var b Body
		if err := json.Unmarshal(r.BodyJSON, &b); err != nil || r.Status != checkpoint.DeliveryDelivered {
			t.Errorf("row %+v (%v)", r, err)
		}
	}
}
