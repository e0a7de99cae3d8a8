export const options = { stages: [{duration:'3s', target: 4}] }; export default function(){}
