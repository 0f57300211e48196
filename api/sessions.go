package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/scenario-server/scenario-server/auth"
	"github.com/scenario-server/scenario-server/internal/names"
)

// EndedSessions is the answer of DELETE /api/sessions.
type EndedSessions struct {
	Subject string `json:"subject" doc:"The identity provider's subject (sub) whose sessions ended."`
	Ended   int64  `json:"ended" doc:"How many of its designer sessions were stored, and ended (sessions expired and not pruned yet count too: they are pruned as new sessions start)."`
}

type endSessionsInput struct {
	Subject string `query:"subject" required:"true" minLength:"1" maxLength:"1024" doc:"The subject (the provider's sub, as the audit log shows it) whose sessions end." example:"u-7"`
}

type endSessionsOutput struct {
	Body EndedSessions
}

// registerSessions registers the admin's end of a person's designer sessions: the provider's
// account closed or its role taken away, the sessions it signed in keep their cookies for up
// to their 8 hours otherwise (a sign-in with a lower role ends only those above it).
func (h *handlers) registerSessions(hapi huma.API) {
	register(hapi, h, huma.Operation{
		OperationID: "end-sessions",
		Method:      http.MethodDelete,
		Path:        "/api/sessions",
		Summary:     "End a person's designer sessions",
		Description: "Ends every designer session (sign-in cookie) of the subject: each is refused (401) from its next request on, and an event stream opened " +
			"with it ends at its next check of the credentials. API tokens are not sessions (DELETE /api/tokens/{id} revokes one); a bearer JWT of " +
			"the provider stays valid until it expires. Ending the sessions of a subject that has none is not an error (ended 0). In the audit " +
			"log as sessions.end. Admin only.",
		Tags:   []string{tagAccess},
		Errors: []int{http.StatusUnprocessableEntity},
	}, func(ctx context.Context, in *endSessionsInput) (*endSessionsOutput, error) {
		target := fmt.Sprintf("sessions of %q", names.Cut(in.Subject, 200))
		noteTarget(ctx, target)
		roles := make([]string, len(auth.Roles))
		for i, r := range auth.Roles {
			roles[i] = string(r)
		}
		n, err := h.store.EndSessions(ctx, in.Subject, roles)
		if err != nil {
			return nil, storeError(ctx, err, "", 0)
		}
		noteTarget(ctx, fmt.Sprintf("%s (%d ended)", target, n))
		return &endSessionsOutput{Body: EndedSessions{Subject: in.Subject, Ended: n}}, nil
	})
}
