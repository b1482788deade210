package client

// LinkTarget and NextPage expose the Link header parser to the fuzz tests.
var (
	LinkTarget = linkTarget
	NextPage   = nextPage
)
