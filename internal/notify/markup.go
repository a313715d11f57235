package notify

import (
	"net/url"
	"regexp"
	"strings"
)

// A notification's text quotes what agents wrote (an error, an item's
// key, a branch name) and is shown by chat services that read markup in
// it: Slack turns <!channel> into a ping of the whole channel and
// <https://evil|here> into a link, Discord pings on @everyone and
// <@id>, Teams renders HTML and markdown. The text field of each body is
// therefore escaped for the service its target posts to, so that it is
// shown as written and pings nobody; the structured fields of the body
// (step, item, error…) keep their raw values for programs.

// Formats of the text field, chosen by the target (textFormat).
const (
	// formatSlack is Slack's: &, < and > as the entities Slack decodes.
	formatSlack = "slack"
	// formatDiscord is Discord's: markdown escaped with backslashes,
	// mentions (@everyone, @here, <@id>, <#id>) broken with a zero-width
	// space.
	formatDiscord = "discord"
	// formatTeams is Microsoft Teams': &, < and > as entities, markdown
	// escaped with backslashes.
	formatTeams = "teams"
	// formatChat is for any other target (another webhook, a command
	// that may post it on): Slack's escaping, which Mattermost, Rocket.Chat
	// and the Slack-compatible webhooks of other services share, and the
	// broadcast words (@channel, @here, @everyone, @all) broken.
	formatChat = "chat"
)

// zwsp is a zero-width space: put after an @ or a <, it keeps a mention
// from being read as one while the text looks the same.
const zwsp = "\u200b"

// textFormat is the format a target reads its text in: Slack's, Discord's
// or Teams' for a webhook on their hosts, formatChat for anything else.
func textFormat(webhook string) string {
	if webhook == "" {
		return formatChat
	}
	u, err := url.Parse(webhook)
	if err != nil {
		return formatChat
	}
	host := strings.ToLower(u.Hostname())
	sub := func(domain string) bool { return host == domain || strings.HasSuffix(host, "."+domain) }
	switch {
	case sub("slack.com"):
		return formatSlack
	case sub("discord.com"), sub("discordapp.com"):
		return formatDiscord
	case sub("webhook.office.com"), sub("outlook.office.com"), sub("outlook.office365.com"), sub("logic.azure.com"),
		sub("api.powerplatform.com"):
		return formatTeams
	}
	return formatChat
}

var (
	// slackEntities are the three characters Slack reads as markup,
	// written as the entities it shows as those characters.
	slackEntities = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	// discordMarkdown escapes what Discord's markdown reads (emphasis,
	// code, spoilers, quotes, headings, masked links) and breaks the
	// angle-bracket mentions (<@id>, <@&id>, <#id>, <:emoji:id>, <t:…>).
	discordMarkdown = strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "~", `\~`, "`", "\\`", "|", `\|`,
		">", `\>`, "#", `\#`, "[", `\[`, "]", `\]`, "<", "<"+zwsp)
	// teamsMarkdown escapes what Teams' markdown reads; & < > are
	// entities first, as in Slack.
	teamsMarkdown = strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "~", `\~`, "`", "\\`", "#", `\#`,
		"[", `\[`, "]", `\]`, "&", "&amp;", "<", "&lt;", ">", "&gt;")
	// broadcast matches the words that ping everyone in a channel.
	broadcast      = regexp.MustCompile(`(?i)@(everyone|here|channel|all)\b`)
	discordPingAll = regexp.MustCompile(`(?i)@(everyone|here)\b`)
)

// escapeText writes text, one line, in format: shown as written, with no
// markup and no mention of anyone.
func escapeText(format, text string) string {
	switch format {
	case formatSlack:
		return slackEntities.Replace(text)
	case formatDiscord:
		return discordPingAll.ReplaceAllString(discordMarkdown.Replace(text), "@"+zwsp+"$1")
	case formatTeams:
		return teamsMarkdown.Replace(text)
	}
	return broadcast.ReplaceAllString(slackEntities.Replace(text), "@"+zwsp+"$1")
}
