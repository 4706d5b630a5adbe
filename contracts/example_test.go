package contracts_test

import (
	"encoding/json"
	"fmt"

	"shelldon/contracts"
)

// An ops block is a JSON array of ops, each naming its kind under "op".
// Decoding is strict: an unknown op or field is an error, which is how a
// worker rejects a malformed block whole.
func ExampleOp() {
	var ops []contracts.Op
	err := json.Unmarshal([]byte(`[{"op":"remember","topic":"coffee","text":"loves hazelnut"}]`), &ops)
	fmt.Println(err, ops[0].Body.OpName(), ops[0].Body.Validate())

	err = json.Unmarshal([]byte(`[{"op":"remember","txt":"typo"}]`), &ops)
	fmt.Println(err)
	// Output:
	// <nil> remember <nil>
	// op remember: json: unknown field "txt"
}

// The routing table says where each kind goes and who may send it.
func ExampleRoutes() {
	r := contracts.Routes[contracts.KindCompletion]
	fmt.Println(r.To, r.Delivery == contracts.ToTurn, contracts.MaySend(contracts.RoleWorker, contracts.KindOutbound))
	// Output: worker true false
}
